// Unfolding an NCHW image into the column matrix of im2col + GEMM convolution, its adjoint, and the
// split of a batch over the pool for the image-by-image paths: shared by the f32/f64 (conv.cc) and
// bf16 (conv_bf16.cc) CPU convolutions.
#pragma once
#include <emmintrin.h>
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>
#include "../nn_kernels.h"
#include "threadpool.h"

namespace flock::cpu {

// Whether conv.cc runs this shape image by image (FLOCKML_CONV_ALGO, else at least one image per
// pool thread); the bf16 kernels make the same choice.
bool conv_by_images(const Conv2dGeom& g);

// Calls body(t, i0, i1) for part t of min(n, threads) parts, images [n·t/parts, n·(t+1)/parts).
template <class Body>
void image_parts(int64_t n, Body body) {
  const int64_t parts = std::min<int64_t>(n, num_threads());
  parallel_for(parts, 1, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) body(t, n * t / parts, n * (t + 1) / parts);
  });
}

// The image path's weight gradient: per-part f32 partials ([parts][size], each group's block
// [ocg, kk], or [kk, ocg] when `transposed`) summed in part order, store(j, sum) for each element j
// of the [groups·ocg·kk] gradient. The result does not depend on how the pool scheduled the parts.
template <class Store>
void sum_partials(const float* partials, int64_t parts, int64_t size, int64_t ocg, int64_t kk, bool transposed, Store store) {
  parallel_for(size, 4096, [&](int64_t b, int64_t e) {
    for (int64_t j = b; j < e; ++j) {
      const int64_t gi = j / (ocg * kk), r = j % (ocg * kk), o = r / kk, k = r % kk;
      const int64_t src = transposed ? gi * ocg * kk + k * ocg + o : j;
      float acc = partials[src];
      for (int64_t t = 1; t < parts; ++t) acc += partials[t * size + src];
      store(j, acc);
    }
  });
}

// A 1×1 stride-1 unpadded kernel: each image is its own column matrix.
inline bool pointwise(const Conv2dGeom& g) { return g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.ph == 0 && g.pw == 0; }

// n bytes, sizeof(U) ≤ n ≤ 2·sizeof(U), as a first and a last word (overlapping).
template <class U>
inline void copy_ends(char* d, const char* s, size_t n) {
  U a, b;
  std::memcpy(&a, s, sizeof(U));
  std::memcpy(&b, s + n - sizeof(U), sizeof(U));
  std::memcpy(d, &a, sizeof(U));
  std::memcpy(d + n - sizeof(U), &b, sizeof(U));
}

// Copies n bytes: short runs (a 13-pixel image row) by 16-byte loads and stores, the last one
// overlapping, rather than a libc call each — unfolding a small image makes thousands of them.
inline void copy_run(void* dst, const void* src, size_t n) {
  char* d = static_cast<char*>(dst);
  const char* s = static_cast<const char*>(src);
  if (n >= 256) {
    std::memcpy(d, s, n);
  } else if (n >= 16) {
    size_t k = 0;
    for (; k + 16 <= n; k += 16)
      _mm_storeu_si128(reinterpret_cast<__m128i*>(d + k), _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + k)));
    if (k < n)
      _mm_storeu_si128(reinterpret_cast<__m128i*>(d + n - 16), _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + n - 16)));
  } else if (n >= 8) {
    copy_ends<uint64_t>(d, s, n);
  } else if (n >= 4) {
    copy_ends<uint32_t>(d, s, n);
  } else {
    for (size_t k = 0; k < n; ++k) d[k] = s[k];
  }
}

// The output columns [lo, hi) whose input column ox·sw + off (off = j·dw − pw for kernel column
// j) lies inside [0, w); the others read padding.
inline std::pair<int64_t, int64_t> inside_columns(const Conv2dGeom& g, int64_t off) {
  const int64_t lo = std::min(g.ow, off >= 0 ? 0 : (-off + g.sw - 1) / g.sw);
  const int64_t hi = std::max(lo, std::min(g.ow, g.w - off > 0 ? (g.w - off + g.sw - 1) / g.sw : 0));
  return {lo, hi};
}

// col[(c·KH + i)·KW + j, oy·OW + ox] (row stride ld) = x[c, oy·sh − ph + i·dh, ox·sw − pw + j·dw] (0 outside).
// The geometry is read into locals and each kernel column's inside range found once: the row
// copies store through char pointers, which could alias `g`, so the compiler would reload it.
template <class T>
void im2col(const T* x, T* col, int64_t ld, int64_t channels, const Conv2dGeom& g) {
  const int64_t h = g.h, w = g.w, oh = g.oh, ow = g.ow, sh = g.sh, sw = g.sw, kh = g.kh, kw = g.kw;
  for (int64_t j = 0; j < kw; ++j) {
    const int64_t off = j * g.dw - g.pw;
    const auto [lo, hi] = inside_columns(g, off);
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t i = 0; i < kh; ++i) {
        T* row = col + ((c * kh + i) * kw + j) * ld;
        const T* plane = x + c * h * w;
        const int64_t iy0 = i * g.dh - g.ph;
        for (int64_t oy = 0; oy < oh; ++oy) {
          const int64_t iy = oy * sh + iy0;
          T* dst = row + oy * ow;
          if (iy < 0 || iy >= h) {
            for (int64_t ox = 0; ox < ow; ++ox) dst[ox] = T(0);
            continue;
          }
          const T* src = plane + iy * w;
          for (int64_t ox = 0; ox < lo; ++ox) dst[ox] = T(0);
          if (sw == 1)
            copy_run(dst + lo, src + lo + off, sizeof(T) * (hi - lo));
          else
            for (int64_t ox = lo; ox < hi; ++ox) dst[ox] = src[ox * sw + off];
          for (int64_t ox = hi; ox < ow; ++ox) dst[ox] = T(0);
        }
      }
  }
}

// The adjoint of im2col: accumulates every column entry back into its input pixel.
template <class T>
void col2im(const T* col, int64_t ld, T* x, int64_t channels, const Conv2dGeom& g) {
  const int64_t h = g.h, w = g.w, oh = g.oh, ow = g.ow, sh = g.sh, sw = g.sw, kh = g.kh, kw = g.kw;
  std::fill(x, x + channels * h * w, T(0));
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t i = 0; i < kh; ++i)
      for (int64_t j = 0; j < kw; ++j) {
        const T* row = col + ((c * kh + i) * kw + j) * ld;
        T* plane = x + c * h * w;
        const int64_t off = j * g.dw - g.pw, iy0 = i * g.dh - g.ph;
        const auto [lo, hi] = inside_columns(g, off);
        for (int64_t oy = 0; oy < oh; ++oy) {
          const int64_t iy = oy * sh + iy0;
          if (iy < 0 || iy >= h) continue;
          T* dst = plane + iy * w;
          const T* src = row + oy * ow;
          if (sw == 1)
            for (int64_t ox = lo; ox < hi; ++ox) dst[ox + off] += src[ox];
          else
            for (int64_t ox = lo; ox < hi; ++ox) dst[ox * sw + off] += src[ox];
        }
      }
}

}  // namespace flock::cpu
