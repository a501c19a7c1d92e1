// CUDA global gradient norm and clipping over many tensors per launch (multi_tensor.cuh), so a
// model's few hundred gradients take a handful of launches instead of one reduction per tensor.
// Partial sums are double and meet in one f64 accumulator: atomicAdd, or for the max-norm atomicMax
// on the bits (non-negative doubles order like their bit patterns; a NaN's sort above +inf).
#include <cmath>
#include <vector>
#include "common.cuh"
#include "multi_tensor.cuh"
#include "row_team.cuh"
#include "nn_kernels.h"

namespace flock::cuda {
namespace {

template <class T>
__global__ void grad_norm_partial_kernel(const __grid_constant__ TensorBatch<T, 1> b, double p, int mode, double* acc) {
  int64_t begin, end;
  const T* x = b.ptr[0][block_tensor(b, &begin, &end)];
  double s = 0;
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    const double a = fabs(static_cast<double>(Num<T>::load(x[i])));
    if (mode == 0)
      s = (a > s || a != a) ? a : s;
    else if (mode == 2)
      s += a * a;
    else if (mode == 1)
      s += a;
    else
      s += pow(a, p);
  }
  // NaN wins the max, as it would in a norm that propagates it.
  s = mode == 0 ? RowTeam<false>::all_reduce(s, [](double x, double y) { return (y > x || y != y) ? y : x; })
                : RowTeam<false>::all_reduce(s, [](double x, double y) { return x + y; });
  if (threadIdx.x == 0) {
    if (mode == 0)
      atomicMax(reinterpret_cast<unsigned long long*>(acc), static_cast<unsigned long long>(__double_as_longlong(s)));
    else
      atomicAdd(acc, s);
  }
}

template <class T>
__global__ void grad_norm_finish_kernel(const double* acc, T* out, double p, int mode) {
  const double s = *acc;
  const double r = mode == 0 || mode == 1 ? s : mode == 2 ? sqrt(s) : pow(s, 1.0 / p);
  *out = Num<T>::from_double(r);
}

template <class T>
__global__ void clip_by_norm_kernel(const __grid_constant__ TensorBatch<T, 1> b, const T* total, double max_norm) {
  // As PyTorch's clamp(max=1): a NaN norm scales by NaN rather than being ignored.
  const double raw = max_norm / (Num<T>::to_double(*total) + 1e-6);
  if (raw >= 1.0) return;
  using C = typename Num<T>::C;
  const C coef = static_cast<C>(raw);
  int64_t begin, end;
  T* x = b.ptr[0][block_tensor(b, &begin, &end)];
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) x[i] = Num<T>::store(Num<T>::load(x[i]) * coef);
}

int norm_mode(double p) { return std::isinf(p) ? 0 : p == 2 ? 2 : p == 1 ? 1 : 3; }

void grad_norm_cuda(const std::vector<Tensor>& ts, Tensor& acc, Tensor& out, double p) {
  cudaStream_t s = current_stream();
  const int mode = norm_mode(p);
  double* a = acc.data<double>();
  check(cudaMemsetAsync(a, 0, sizeof(double), s), "gradNorm");
  visit_float(out.dtype, "gradNorm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (const Tensor& t : ts)
      if (t.dtype != out.dtype) fail(Code::DType, "gradNorm: tensors of mixed dtypes");
    for_each_batch<T, 1>({&ts}, out.dtype, [&](const TensorBatch<T, 1>& b, int64_t blocks) {
      FLOCK_LAUNCH(static_cast<unsigned>(blocks), kThreads, 0, s, grad_norm_partial_kernel<T>)(b, p, mode, a);
      check_launch("grad_norm_partial_kernel");
    });
    FLOCK_LAUNCH(1, 1, 0, s, grad_norm_finish_kernel<T>)(a, out.data<T>(), p, mode);
    check_launch("grad_norm_finish_kernel");
  });
}

void clip_by_norm_cuda(std::vector<Tensor>& ts, const Tensor& total, double max_norm) {
  cudaStream_t s = current_stream();
  visit_float(total.dtype, "clipByNorm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (const Tensor& t : ts)
      if (t.dtype != total.dtype) fail(Code::DType, "clipByNorm: tensors of mixed dtypes");
    const T* norm = total.data<T>();
    for_each_batch<T, 1>({&ts}, total.dtype, [&](const TensorBatch<T, 1>& b, int64_t blocks) {
      FLOCK_LAUNCH(static_cast<unsigned>(blocks), kThreads, 0, s, clip_by_norm_kernel<T>)(b, norm, max_norm);
      check_launch("clip_by_norm_kernel");
    });
  });
}

}  // namespace

FLOCK_REGISTER_KERNEL(grad_norm, CUDA, grad_norm_cuda);
FLOCK_REGISTER_KERNEL(clip_by_norm, CUDA, clip_by_norm_cuda);

}  // namespace flock::cuda
