// CUDA gradient unscaling for GradScaler: all gradients of one dtype in a few multi-tensor launches
// (multi_tensor.cuh), each multiplying by 1/scale in place and raising the device-side found-inf
// flag on any inf or NaN, so nothing is read back until the optimizer step.
#include <cstdint>
#include <vector>
#include "common.cuh"
#include "multi_tensor.cuh"
#include "nn_kernels.h"

namespace flock::cuda {
namespace {

constexpr int kUnscaleThreads = 256;

template <class T>
__global__ void __launch_bounds__(kUnscaleThreads)
    amp_unscale_kernel(const __grid_constant__ TensorBatch<T, 1> b, float* __restrict__ found_inf, float inv_scale) {
  int64_t begin, end;
  const int t = block_tensor(b, &begin, &end);
  T* __restrict__ x = b.ptr[0][t];
  bool bad = false;
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    const auto v = Num<T>::load(x[i]);
    bad |= !isfinite(v);
    x[i] = Num<T>::store(v * static_cast<decltype(v)>(inv_scale));
  }
  // Racing writers all store the same value, so a plain store suffices.
  if (bad) *found_inf = 1.0f;
}

template <class T>
void unscale_typed(std::vector<Tensor>& ts, DType dtype, float* found_inf, double inv_scale, cudaStream_t s) {
  const std::vector<const std::vector<Tensor>*> lists{&ts};
  for_each_batch<T, 1>(lists, dtype, [&](const TensorBatch<T, 1>& b, int64_t blocks) {
    FLOCK_LAUNCH(static_cast<unsigned>(blocks), kUnscaleThreads, 0, s, amp_unscale_kernel<T>)
    (b, found_inf, static_cast<float>(inv_scale));
    check_launch("amp_unscale_kernel");
  });
}

void amp_unscale_cuda(std::vector<Tensor>& ts, Tensor& found_inf, double inv_scale) {
  for (size_t k = 0; k < ts.size(); ++k)
    if (ceil_div(ts[k].numel(), kTensorChunk) > INT32_MAX)
      fail(Code::Shape, "ampUnscale: tensor ", k, " of ", ts[k].numel(), " elements is larger than one launch covers");
  cudaStream_t s = current_stream();
  float* flag = found_inf.data<float>();
  unscale_typed<float>(ts, DType::f32, flag, inv_scale, s);
  unscale_typed<double>(ts, DType::f64, flag, inv_scale, s);
  unscale_typed<bf16>(ts, DType::bf16, flag, inv_scale, s);
  unscale_typed<f16>(ts, DType::f16, flag, inv_scale, s);
}

}  // namespace

FLOCK_REGISTER_KERNEL(amp_unscale, CUDA, amp_unscale_cuda);

}  // namespace flock::cuda
