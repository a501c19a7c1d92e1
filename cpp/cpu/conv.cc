// CPU 2-D convolution by im2col + GEMM. Each batch image is unfolded into a [C/g·KH·KW, OH·OW]
// column matrix and multiplied with the group's weights; images run in parallel over the pool
// (the GEMM inside then runs inline), which keeps every core busy at small batch-free sizes too.
#include <algorithm>
#include <cstring>
#include <vector>
#include "../nn_kernels.h"
#include "gemm.h"
#include "threadpool.h"

namespace flock::cpu {
namespace {

inline void gemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, bool ta, const float* b, int64_t ldb, bool tb, float* c, int64_t ldc) {
  sgemm(m, n, k, a, lda, ta, b, ldb, tb, c, ldc);
}
inline void gemm(int64_t m, int64_t n, int64_t k, const double* a, int64_t lda, bool ta, const double* b, int64_t ldb, bool tb, double* c, int64_t ldc) {
  dgemm(m, n, k, a, lda, ta, b, ldb, tb, c, ldc);
}

// col[(c·KH + i)·KW + j, oy·OW + ox] = x[c, oy·sh − ph + i·dh, ox·sw − pw + j·dw] (0 outside).
template <class T>
void im2col(const T* x, T* col, int64_t channels, const Conv2dGeom& g) {
  const int64_t ohw = g.oh * g.ow;
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t i = 0; i < g.kh; ++i)
      for (int64_t j = 0; j < g.kw; ++j) {
        T* row = col + ((c * g.kh + i) * g.kw + j) * ohw;
        const T* plane = x + c * g.h * g.w;
        for (int64_t oy = 0; oy < g.oh; ++oy) {
          const int64_t iy = oy * g.sh - g.ph + i * g.dh;
          T* dst = row + oy * g.ow;
          if (iy < 0 || iy >= g.h) { std::fill(dst, dst + g.ow, T(0)); continue; }
          const T* src = plane + iy * g.w;
          for (int64_t ox = 0; ox < g.ow; ++ox) {
            const int64_t ix = ox * g.sw - g.pw + j * g.dw;
            dst[ox] = (ix >= 0 && ix < g.w) ? src[ix] : T(0);
          }
        }
      }
}

// The adjoint of im2col: accumulates every column entry back into its input pixel.
template <class T>
void col2im(const T* col, T* x, int64_t channels, const Conv2dGeom& g) {
  const int64_t ohw = g.oh * g.ow;
  std::fill(x, x + channels * g.h * g.w, T(0));
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t i = 0; i < g.kh; ++i)
      for (int64_t j = 0; j < g.kw; ++j) {
        const T* row = col + ((c * g.kh + i) * g.kw + j) * ohw;
        T* plane = x + c * g.h * g.w;
        for (int64_t oy = 0; oy < g.oh; ++oy) {
          const int64_t iy = oy * g.sh - g.ph + i * g.dh;
          if (iy < 0 || iy >= g.h) continue;
          T* dst = plane + iy * g.w;
          const T* src = row + oy * g.ow;
          for (int64_t ox = 0; ox < g.ow; ++ox) {
            const int64_t ix = ox * g.sw - g.pw + j * g.dw;
            if (ix >= 0 && ix < g.w) dst[ix] += src[ox];
          }
        }
      }
}

template <class T>
void forward_typed(const Tensor& xt, const Tensor& wt, const Tensor* bt, Tensor& yt, const Conv2dGeom& g) {
  const T* bias = bt ? bt->data<T>() : nullptr;
  const T* x = xt.data<T>();
  const T* w = wt.data<T>();
  T* y = yt.data<T>();
  const int64_t cg = g.c / g.groups, ocg = g.oc / g.groups, kk = cg * g.kh * g.kw, ohw = g.oh * g.ow;
  parallel_for(g.n, 1, [&](int64_t b, int64_t e) {
    std::vector<T> col(static_cast<size_t>(kk * ohw));
    for (int64_t n = b; n < e; ++n)
      for (int64_t gi = 0; gi < g.groups; ++gi) {
        im2col(x + (n * g.c + gi * cg) * g.h * g.w, col.data(), cg, g);
        gemm(ocg, ohw, kk, w + gi * ocg * kk, kk, false, col.data(), ohw, false, y + (n * g.oc + gi * ocg) * ohw, ohw);
        if (bias)
          for (int64_t o = gi * ocg; o < (gi + 1) * ocg; ++o) {
            T* row = y + (n * g.oc + o) * ohw;
            for (int64_t i = 0; i < ohw; ++i) row[i] += bias[o];
          }
      }
  });
}

template <class T>
void backward_input_typed(const Tensor& gyt, const Tensor& wt, Tensor& gxt, const Conv2dGeom& g) {
  const T* gy = gyt.data<T>();
  const T* w = wt.data<T>();
  T* gx = gxt.data<T>();
  const int64_t cg = g.c / g.groups, ocg = g.oc / g.groups, kk = cg * g.kh * g.kw, ohw = g.oh * g.ow;
  parallel_for(g.n, 1, [&](int64_t b, int64_t e) {
    std::vector<T> col(static_cast<size_t>(kk * ohw));
    for (int64_t n = b; n < e; ++n)
      for (int64_t gi = 0; gi < g.groups; ++gi) {
        // col = Wᵀ · gy  ([kk, ocg] · [ocg, ohw])
        gemm(kk, ohw, ocg, w + gi * ocg * kk, kk, true, gy + (n * g.oc + gi * ocg) * ohw, ohw, false, col.data(), ohw);
        col2im(col.data(), gx + (n * g.c + gi * cg) * g.h * g.w, cg, g);
      }
  });
}

template <class T>
void backward_weight_typed(const Tensor& xt, const Tensor& gyt, Tensor& gwt, const Conv2dGeom& g) {
  const T* x = xt.data<T>();
  const T* gy = gyt.data<T>();
  T* gw = gwt.data<T>();
  const int64_t cg = g.c / g.groups, ocg = g.oc / g.groups, kk = cg * g.kh * g.kw, ohw = g.oh * g.ow;
  const int64_t wsize = g.oc * kk;
  // Fixed slices of the batch, each summing into its own buffer, then reduced in order: the
  // result does not depend on how the pool schedules the slices.
  const int64_t slices = std::max<int64_t>(1, std::min<int64_t>(g.n, num_threads()));
  std::vector<std::vector<T>> partial(static_cast<size_t>(slices), std::vector<T>(static_cast<size_t>(wsize), T(0)));
  parallel_for(slices, 1, [&](int64_t sb, int64_t se) {
    std::vector<T> col(static_cast<size_t>(kk * ohw)), tmp(static_cast<size_t>(ocg * kk));
    for (int64_t s = sb; s < se; ++s) {
      const int64_t n0 = g.n * s / slices, n1 = g.n * (s + 1) / slices;
      T* acc = partial[s].data();
      for (int64_t n = n0; n < n1; ++n)
        for (int64_t gi = 0; gi < g.groups; ++gi) {
          im2col(x + (n * g.c + gi * cg) * g.h * g.w, col.data(), cg, g);
          // gw_g += gy · colᵀ  ([ocg, ohw] · [ohw, kk])
          gemm(ocg, kk, ohw, gy + (n * g.oc + gi * ocg) * ohw, ohw, false, col.data(), ohw, true, tmp.data(), kk);
          T* dst = acc + gi * ocg * kk;
          for (int64_t i = 0; i < ocg * kk; ++i) dst[i] += tmp[i];
        }
    }
  });
  for (int64_t i = 0; i < wsize; ++i) {
    T s = 0;
    for (int64_t p = 0; p < slices; ++p) s += partial[p][i];
    gw[i] = s;
  }
}


void conv2d_forward_cpu(const Tensor& x, const Tensor& w, const Tensor* b, Tensor& y, const Conv2dGeom& g) {
  if (x.dtype == DType::f64) forward_typed<double>(x, w, b, y, g);
  else forward_typed<float>(x, w, b, y, g);
}
void conv2d_backward_input_cpu(const Tensor& gy, const Tensor& w, Tensor& gx, const Conv2dGeom& g) {
  if (gy.dtype == DType::f64) backward_input_typed<double>(gy, w, gx, g);
  else backward_input_typed<float>(gy, w, gx, g);
}
void conv2d_backward_weight_cpu(const Tensor& x, const Tensor& gy, Tensor& gw, const Conv2dGeom& g) {
  if (x.dtype == DType::f64) backward_weight_typed<double>(x, gy, gw, g);
  else backward_weight_typed<float>(x, gy, gw, g);
}

}  // namespace

FLOCK_REGISTER_KERNEL(conv2d_forward, CPU, conv2d_forward_cpu);
FLOCK_REGISTER_KERNEL(conv2d_backward_input, CPU, conv2d_backward_input_cpu);
FLOCK_REGISTER_KERNEL(conv2d_backward_weight, CPU, conv2d_backward_weight_cpu);

}  // namespace flock::cpu
