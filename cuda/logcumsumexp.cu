// CUDA logcumsumexp along dim of a contiguous tensor seen as [outer, n, inner]: a thread per line
// walking n (neighbouring threads read neighbouring columns), adding each term in log space in
// double, as the CPU kernel does (cpp/cpu/logcumsumexp.cc).
#include <cstdint>
#include "common.cuh"
#include "generated/kernels_logcumsumexp.h"

namespace flock::cuda {
namespace {

// log(exp(a) + exp(b)). Equal infinities give themselves (their difference is NaN); NaN spreads.
__device__ __forceinline__ double log_add_exp(double a, double b) {
  if (isnan(a) || isnan(b)) return a + b;
  const double lo = fmin(a, b), hi = fmax(a, b);
  return lo != hi || isfinite(lo) ? hi + log1p(exp(lo - hi)) : a;
}

template <class T>
__global__ void logcumsumexp_kernel(const T* x, T* out, int64_t outer, int64_t n, int64_t inner) {
  FLOCK_GRID_STRIDE(l, outer * inner) {
    const int64_t base = (l / inner) * n * inner + l % inner;
    double acc = -INFINITY;
    for (int64_t r = 0; r < n; ++r) {
      acc = log_add_exp(acc, Num<T>::to_double(x[base + r * inner]));
      out[base + r * inner] = Num<T>::from_double(acc);
    }
  }
}

void logcumsumexp_cuda(const Tensor& x, Tensor& out, int64_t dim) {
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= x.shape[d];
  for (int64_t d = dim + 1; d < x.dim(); ++d) inner *= x.shape[d];
  const int64_t n = x.dim() == 0 ? 1 : x.shape[dim];
  cudaStream_t s = current_stream();
  visit_float(x.dtype, "logcumsumexp", [&](auto tag) {
    using T = typename decltype(tag)::type;
    FLOCK_LAUNCH(grid_for(outer * inner), kThreads, 0, s, logcumsumexp_kernel<T>)(x.data<T>(), out.data<T>(), outer, n, inner);
  });
  check_launch("logcumsumexp_kernel");
}

}  // namespace

FLOCK_REGISTER_KERNEL(logcumsumexp, CUDA, logcumsumexp_cuda);

}  // namespace flock::cuda
