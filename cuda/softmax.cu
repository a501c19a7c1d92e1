// CUDA softmax and log-softmax over the middle axis of a [outer, dim, inner] view. As on the CPU,
// the row maximum is subtracted before exponentiating (an all -inf row uses 0 instead, so it
// yields NaN-free -inf logs), and the arithmetic is done in the storage's accumulation type.
// Rows (inner == 1) take a block each and three passes over global memory; strided columns take
// a thread each.
#include <cmath>
#include "common.cuh"
#include "kernels.h"

namespace flock::cuda {
namespace {

// std::max(a, b) as the CPU writes it: (a < b) ? b : a, so NaN ordering matches.
template <class C>
__device__ __forceinline__ C cpu_max(C a, C b) {
  return a < b ? b : a;
}

template <class C, class F>
__device__ C block_all_reduce(C v, F f) {
  __shared__ C part[32];
  for (int d = 16; d > 0; d >>= 1) v = f(v, __shfl_down_sync(0xffffffffu, v, d));
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
  __syncthreads();
  if (lane == 0) part[warp] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < warps; ++w) v = f(v, part[w]);
    part[0] = v;
  }
  __syncthreads();
  return part[0];
}

template <class T>
__global__ void softmax_row_kernel(const T* x, T* out, int64_t outer, int64_t dim, bool log) {
  using C = typename Num<T>::C;
  for (int64_t o = blockIdx.x; o < outer; o += gridDim.x) {
    const T* src = x + o * dim;
    T* dst = out + o * dim;
    C mx = -INFINITY;
    for (int64_t d = threadIdx.x; d < dim; d += blockDim.x) mx = cpu_max(mx, Num<T>::load(src[d]));
    mx = block_all_reduce(mx, [](C a, C b) { return cpu_max(a, b); });
    if (isinf(mx) && mx < 0) mx = 0;
    C sum = 0;
    for (int64_t d = threadIdx.x; d < dim; d += blockDim.x) sum += exp(Num<T>::load(src[d]) - mx);
    sum = block_all_reduce(sum, [](C a, C b) { return a + b; });
    if (log) {
      const C lse = mx + ::log(sum);
      for (int64_t d = threadIdx.x; d < dim; d += blockDim.x) dst[d] = Num<T>::store(Num<T>::load(src[d]) - lse);
    } else {
      const C inv = C(1) / sum;
      for (int64_t d = threadIdx.x; d < dim; d += blockDim.x) dst[d] = Num<T>::store(exp(Num<T>::load(src[d]) - mx) * inv);
    }
  }
}

template <class T>
__global__ void softmax_column_kernel(const T* x, T* out, int64_t outer, int64_t dim, int64_t inner, bool log) {
  using C = typename Num<T>::C;
  FLOCK_GRID_STRIDE(j, outer * inner) {
    const int64_t o = j / inner, i = j % inner;
    const T* src = x + o * dim * inner + i;
    T* dst = out + o * dim * inner + i;
    C mx = -INFINITY;
    for (int64_t d = 0; d < dim; ++d) mx = cpu_max(mx, Num<T>::load(src[d * inner]));
    if (isinf(mx) && mx < 0) mx = 0;
    C sum = 0;
    for (int64_t d = 0; d < dim; ++d) sum += exp(Num<T>::load(src[d * inner]) - mx);
    if (log) {
      const C lse = mx + ::log(sum);
      for (int64_t d = 0; d < dim; ++d) dst[d * inner] = Num<T>::store(Num<T>::load(src[d * inner]) - lse);
    } else {
      const C inv = C(1) / sum;
      for (int64_t d = 0; d < dim; ++d) dst[d * inner] = Num<T>::store(exp(Num<T>::load(src[d * inner]) - mx) * inv);
    }
  }
}

void softmax_cuda(const Tensor& x, Tensor& out, int64_t outer, int64_t dim, int64_t inner, bool log) {
  if (outer * inner * dim == 0) return;
  cudaStream_t s = current_stream();
  visit_float(x.dtype, "softmax", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (inner == 1) {
      const unsigned blocks = static_cast<unsigned>(outer < 65535 * 16 ? outer : 65535 * 16);
      const int threads = dim >= 1024 ? 512 : (dim >= 256 ? 256 : 128);
      FLOCK_LAUNCH(blocks, threads, 0, s, softmax_row_kernel<T>)(x.data<T>(), out.data<T>(), outer, dim, log);
    } else {
      FLOCK_LAUNCH(grid_for(outer * inner), kThreads, 0, s, softmax_column_kernel<T>)
      (x.data<T>(), out.data<T>(), outer, dim, inner, log);
    }
  });
  check_launch("softmax_kernel");
}

}  // namespace

FLOCK_REGISTER_KERNEL(softmax, CUDA, softmax_cuda);

}  // namespace flock::cuda
