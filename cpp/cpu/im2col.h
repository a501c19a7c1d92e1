// Unfolding an NCHW image into the column matrix of im2col + GEMM convolution, and its adjoint:
// shared by the f32/f64 (conv.cc) and bf16 (conv_bf16.cc) CPU convolutions.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>
#include "../nn_kernels.h"

namespace flock::cpu {

// The output columns [lo, hi) whose input column ox·sw + off (off = j·dw − pw for kernel column
// j) lies inside [0, w); the others read padding.
inline std::pair<int64_t, int64_t> inside_columns(const Conv2dGeom& g, int64_t off) {
  const int64_t lo = std::min(g.ow, off >= 0 ? 0 : (-off + g.sw - 1) / g.sw);
  const int64_t hi = std::max(lo, std::min(g.ow, g.w - off > 0 ? (g.w - off + g.sw - 1) / g.sw : 0));
  return {lo, hi};
}

// col[(c·KH + i)·KW + j, oy·OW + ox] (row stride ld) = x[c, oy·sh − ph + i·dh, ox·sw − pw + j·dw] (0 outside).
template <class T>
void im2col(const T* x, T* col, int64_t ld, int64_t channels, const Conv2dGeom& g) {
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t i = 0; i < g.kh; ++i)
      for (int64_t j = 0; j < g.kw; ++j) {
        T* row = col + ((c * g.kh + i) * g.kw + j) * ld;
        const T* plane = x + c * g.h * g.w;
        for (int64_t oy = 0; oy < g.oh; ++oy) {
          const int64_t iy = oy * g.sh - g.ph + i * g.dh;
          T* dst = row + oy * g.ow;
          if (iy < 0 || iy >= g.h) { std::fill(dst, dst + g.ow, T(0)); continue; }
          const T* src = plane + iy * g.w;
          const int64_t off = j * g.dw - g.pw;
          const auto [lo, hi] = inside_columns(g, off);
          std::fill(dst, dst + lo, T(0));
          if (g.sw == 1) std::memcpy(dst + lo, src + lo + off, sizeof(T) * (hi - lo));
          else
            for (int64_t ox = lo; ox < hi; ++ox) dst[ox] = src[ox * g.sw + off];
          std::fill(dst + hi, dst + g.ow, T(0));
        }
      }
}

// The adjoint of im2col: accumulates every column entry back into its input pixel.
template <class T>
void col2im(const T* col, int64_t ld, T* x, int64_t channels, const Conv2dGeom& g) {
  std::fill(x, x + channels * g.h * g.w, T(0));
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t i = 0; i < g.kh; ++i)
      for (int64_t j = 0; j < g.kw; ++j) {
        const T* row = col + ((c * g.kh + i) * g.kw + j) * ld;
        T* plane = x + c * g.h * g.w;
        for (int64_t oy = 0; oy < g.oh; ++oy) {
          const int64_t iy = oy * g.sh - g.ph + i * g.dh;
          if (iy < 0 || iy >= g.h) continue;
          T* dst = plane + iy * g.w;
          const T* src = row + oy * g.ow;
          const int64_t off = j * g.dw - g.pw;
          const auto [lo, hi] = inside_columns(g, off);
          if (g.sw == 1)
            for (int64_t ox = lo; ox < hi; ++ox) dst[ox + off] += src[ox];
          else
            for (int64_t ox = lo; ox < hi; ++ox) dst[ox * g.sw + off] += src[ox];
        }
      }
}

}  // namespace flock::cpu
