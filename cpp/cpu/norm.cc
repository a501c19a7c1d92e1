// CPU row normalisation: each row of a [rows, d] view is shifted to zero mean and scaled to unit
// variance (biased, as PyTorch's layer/group norm). Statistics are accumulated in double so f32
// rows of many thousands of elements keep their precision; mean and 1/std are saved for backward.
#include <cmath>
#include "../nn_kernels.h"
#include "threadpool.h"

namespace flock::cpu {
namespace {

template <class T>
void forward(const Tensor& xt, Tensor& yt, Tensor& meant, Tensor& rstdt, double eps) {
  const int64_t rows = xt.shape[0], d = xt.shape[1];
  const T* x = xt.data<T>();
  T* y = yt.data<T>();
  T* mean = meant.data<T>();
  T* rstd = rstdt.data<T>();
  parallel_for(rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(d, 1)), [=](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const T* xr = x + r * d;
      double s = 0, ss = 0;
      for (int64_t i = 0; i < d; ++i) s += xr[i];
      const double m = s / double(d);
      for (int64_t i = 0; i < d; ++i) { const double c = xr[i] - m; ss += c * c; }
      const double rs = 1 / std::sqrt(ss / double(d) + eps);
      mean[r] = T(m);
      rstd[r] = T(rs);
      T* yr = y + r * d;
      for (int64_t i = 0; i < d; ++i) yr[i] = T((xr[i] - m) * rs);
    }
  });
}

// gx = rstd · (gy − mean(gy) − x̂ · mean(gy · x̂)), x̂ = (x − mean) · rstd.
template <class T>
void backward(const Tensor& xt, const Tensor& meant, const Tensor& rstdt, const Tensor& gyt, Tensor& gxt) {
  const int64_t rows = xt.shape[0], d = xt.shape[1];
  const T* x = xt.data<T>();
  const T* mean = meant.data<T>();
  const T* rstd = rstdt.data<T>();
  const T* gy = gyt.data<T>();
  T* gx = gxt.data<T>();
  parallel_for(rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(d, 1)), [=](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const T* xr = x + r * d;
      const T* gr = gy + r * d;
      const double m = mean[r], rs = rstd[r];
      double sg = 0, sgx = 0;
      for (int64_t i = 0; i < d; ++i) { sg += gr[i]; sgx += gr[i] * (xr[i] - m) * rs; }
      sg /= double(d);
      sgx /= double(d);
      T* out = gx + r * d;
      for (int64_t i = 0; i < d; ++i) out[i] = T(rs * (gr[i] - sg - (xr[i] - m) * rs * sgx));
    }
  });
}

void forward_cpu(const Tensor& x, Tensor& y, Tensor& mean, Tensor& rstd, double eps) {
  if (x.dtype == DType::f64) forward<double>(x, y, mean, rstd, eps); else forward<float>(x, y, mean, rstd, eps);
}
void backward_cpu(const Tensor& x, const Tensor& mean, const Tensor& rstd, const Tensor& gy, Tensor& gx) {
  if (x.dtype == DType::f64) backward<double>(x, mean, rstd, gy, gx); else backward<float>(x, mean, rstd, gy, gx);
}

}  // namespace

FLOCK_REGISTER_KERNEL(row_norm_forward, CPU, forward_cpu);
FLOCK_REGISTER_KERNEL(row_norm_backward, CPU, backward_cpu);

}  // namespace flock::cpu
