// CPU layer normalisation of a [rows, d] view with its elementwise affine fused in: each row is
// shifted to zero mean and scaled to unit variance (biased, as PyTorch's), then y = x̂·w + b.
// Statistics are accumulated in double so f32 rows of many thousands of elements keep their
// precision; mean and 1/std are saved for backward. Backward computes dx per row and dweight/dbias
// as column sums: each fixed chunk of rows sums into its own partial row (chunks run on the
// intra-op pool), and the partials are added in chunk order, so the result does not depend on the
// number of threads.
#include <algorithm>
#include <cmath>
#include <vector>
#include "../nn_kernels.h"
#include "threadpool.h"

namespace flock::cpu {
namespace {

constexpr int64_t kMaxChunks = 64;

// The affine's presence is a template parameter so the inner loops carry no branch and vectorise.
template <class T, bool kW, bool kB>
void forward(const Tensor& xt, const Tensor* wt, const Tensor* bt, Tensor& yt, Tensor& meant, Tensor& rstdt, double eps) {
  const int64_t rows = xt.shape[0], d = xt.shape[1];
  const T* x = xt.data<T>();
  const T* w = wt ? wt->data<T>() : nullptr;
  const T* b = bt ? bt->data<T>() : nullptr;
  T* y = yt.data<T>();
  T* mean = meant.data<T>();
  T* rstd = rstdt.data<T>();
  parallel_for(rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(d, 1)), [=](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const T* xr = x + r * d;
      double s = 0, ss = 0;
      for (int64_t i = 0; i < d; ++i) s += xr[i];
      const double m = s / double(d);
      for (int64_t i = 0; i < d; ++i) {
        const double c = xr[i] - m;
        ss += c * c;
      }
      const double rs = 1 / std::sqrt(ss / double(d) + eps);
      mean[r] = T(m);
      rstd[r] = T(rs);
      T* yr = y + r * d;
      for (int64_t i = 0; i < d; ++i) {
        double v = (xr[i] - m) * rs;
        if constexpr (kW) v *= double(w[i]);
        if constexpr (kB) v += double(b[i]);
        yr[i] = T(v);
      }
    }
  });
}

// With g = gy·w (gy when there is no weight) and x̂ = (x − mean)·rstd:
//   dx = rstd · (g − mean(g) − x̂ · mean(g · x̂)),  dweight = Σ_rows gy · x̂,  dbias = Σ_rows gy.
template <class T, bool kW, bool kP>
void backward(const Tensor& xt, const Tensor& meant, const Tensor& rstdt, const Tensor* wt, const Tensor& gyt, Tensor& gxt,
              Tensor* gwt, Tensor* gbt) {
  const int64_t rows = xt.shape[0], d = xt.shape[1];
  const T* x = xt.data<T>();
  const T* mean = meant.data<T>();
  const T* rstd = rstdt.data<T>();
  const T* w = wt ? wt->data<T>() : nullptr;
  const T* gy = gyt.data<T>();
  T* gx = gxt.data<T>();
  constexpr bool params = kP;
  const int64_t chunks = params ? std::min(rows, kMaxChunks) : 1;
  const int64_t per_chunk = (rows + chunks - 1) / std::max<int64_t>(chunks, 1);
  // Partial sums: chunk c holds Σ gy·x̂ at [c][0, d) and Σ gy at [c][d, 2d).
  std::vector<double> part(params ? static_cast<size_t>(chunks * 2 * d) : 0, 0.0);
  double* parts = part.data();
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(per_chunk * d, 1));
  parallel_for(chunks, grain, [=](int64_t cb, int64_t ce) {
    for (int64_t c = cb; c < ce; ++c) {
      double* pw = params ? parts + c * 2 * d : nullptr;
      double* pb = params ? pw + d : nullptr;
      const int64_t r1 = std::min(rows, (c + 1) * per_chunk);
      for (int64_t r = c * per_chunk; r < r1; ++r) {
        const T* xr = x + r * d;
        const T* gr = gy + r * d;
        const double m = mean[r], rs = rstd[r];
        double sg = 0, sgx = 0;
        for (int64_t i = 0; i < d; ++i) {
          const double xh = (xr[i] - m) * rs, gyi = double(gr[i]);
          double g = gyi;
          if constexpr (kW) g *= double(w[i]);
          sg += g;
          sgx += g * xh;
          if constexpr (kP) {
            pw[i] += gyi * xh;
            pb[i] += gyi;
          }
        }
        sg /= double(d);
        sgx /= double(d);
        T* out = gx + r * d;
        for (int64_t i = 0; i < d; ++i) {
          double g = double(gr[i]);
          if constexpr (kW) g *= double(w[i]);
          out[i] = T(rs * (g - sg - (xr[i] - m) * rs * sgx));
        }
      }
    }
  });
  if constexpr (!kP) return;
  T* gw = gwt ? gwt->data<T>() : nullptr;
  T* gb = gbt ? gbt->data<T>() : nullptr;
  parallel_for(d, std::max<int64_t>(1, 16384 / std::max<int64_t>(chunks, 1)), [=](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      double sw = 0, sb = 0;
      for (int64_t c = 0; c < chunks; ++c) {
        sw += parts[c * 2 * d + i];
        sb += parts[c * 2 * d + d + i];
      }
      if (gw) gw[i] = T(sw);
      if (gb) gb[i] = T(sb);
    }
  });
}

template <class T>
void forward_typed(const Tensor& x, const Tensor* w, const Tensor* b, Tensor& y, Tensor& mean, Tensor& rstd, double eps) {
  if (w && b)
    forward<T, true, true>(x, w, b, y, mean, rstd, eps);
  else if (w)
    forward<T, true, false>(x, w, b, y, mean, rstd, eps);
  else if (b)
    forward<T, false, true>(x, w, b, y, mean, rstd, eps);
  else
    forward<T, false, false>(x, w, b, y, mean, rstd, eps);
}

template <class T>
void backward_typed(const Tensor& x, const Tensor& mean, const Tensor& rstd, const Tensor* w, const Tensor& gy, Tensor& gx,
                    Tensor* gw, Tensor* gb) {
  const bool p = gw || gb;
  if (w && p)
    backward<T, true, true>(x, mean, rstd, w, gy, gx, gw, gb);
  else if (w)
    backward<T, true, false>(x, mean, rstd, w, gy, gx, gw, gb);
  else if (p)
    backward<T, false, true>(x, mean, rstd, w, gy, gx, gw, gb);
  else
    backward<T, false, false>(x, mean, rstd, w, gy, gx, gw, gb);
}

void forward_cpu(const Tensor& x, const Tensor* w, const Tensor* b, Tensor& y, Tensor& mean, Tensor& rstd, double eps) {
  if (x.dtype == DType::f64)
    forward_typed<double>(x, w, b, y, mean, rstd, eps);
  else
    forward_typed<float>(x, w, b, y, mean, rstd, eps);
}
void backward_cpu(const Tensor& x, const Tensor& mean, const Tensor& rstd, const Tensor* w, const Tensor& gy, Tensor& gx,
                  Tensor* gw, Tensor* gb) {
  if (x.dtype == DType::f64)
    backward_typed<double>(x, mean, rstd, w, gy, gx, gw, gb);
  else
    backward_typed<float>(x, mean, rstd, w, gy, gx, gw, gb);
}

}  // namespace

FLOCK_REGISTER_KERNEL(layer_norm_forward, CPU, forward_cpu);
FLOCK_REGISTER_KERNEL(layer_norm_backward, CPU, backward_cpu);

}  // namespace flock::cpu
