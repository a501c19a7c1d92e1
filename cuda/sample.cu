// CUDA multinomial draws from the Philox stream shared with the CPU (cpp/cpu/sample.cc): the same
// words, the same in-order double running sums and the same searches, so both devices draw the
// same indices. With replacement a block per row (thread 0 sums the row, all threads search);
// without, the keys log(u) / p that a stable sort then ranks.
#include "common.cuh"
#include "kernels.h"
#include "philox.h"

namespace flock::cuda {
namespace {

__device__ __forceinline__ float uniform_at(uint64_t seed, uint64_t offset, int64_t w) {
  return philox_uniform(philox(seed, offset + static_cast<uint64_t>(w / 4)).v[w % 4]);
}

template <class T>
__global__ void multinomial_kernel(const T* probs, double* cdf, int64_t* out, int64_t c, int64_t num_samples, uint64_t seed,
                                   uint64_t offset) {
  const int64_t r = blockIdx.x;
  double* row = cdf + r * c;
  __shared__ double total;
  if (threadIdx.x == 0) {
    double t = 0;
    for (int64_t i = 0; i < c; ++i) {
      t += Num<T>::to_double(probs[r * c + i]);
      row[i] = t;
    }
    total = t;
  }
  __syncthreads();
  for (int64_t s = threadIdx.x; s < num_samples; s += blockDim.x) {
    const double u = static_cast<double>(uniform_at(seed, offset, r * num_samples + s)) * total;
    int64_t lo = 0, hi = c - 1;
    while (lo < hi) {
      const int64_t mid = (lo + hi) / 2;
      if (row[mid] > u)
        hi = mid;
      else
        lo = mid + 1;
    }
    out[r * num_samples + s] = lo;
  }
}

template <class T>
__global__ void multinomial_keys_kernel(const T* probs, double* keys, int64_t n, uint64_t seed, uint64_t offset) {
  FLOCK_GRID_STRIDE(i, n) {
    const double u = 1.0 - static_cast<double>(uniform_at(seed, offset, i));
    const double p = Num<T>::to_double(probs[i]);
    keys[i] = p > 0 ? log(u) / p : -INFINITY;
  }
}

void multinomial_cuda(const Tensor& probs, Tensor& out, int64_t num_samples, uint64_t seed, uint64_t offset) {
  const int64_t rows = probs.shape[0], c = probs.shape[1];
  if (rows == 0) return;
  if (rows > 0x7fffffff) fail(Code::Shape, "multinomial: at most 2^31-1 rows on CUDA, got ", rows);
  cudaStream_t s = current_stream();
  Tensor cdf = empty(probs.shape, DType::f64, probs.device(), "multinomial");  // freed on this stream after the kernel
  visit_float(probs.dtype, "multinomial", [&](auto tag) {
    using T = typename decltype(tag)::type;
    FLOCK_LAUNCH(static_cast<unsigned>(rows), kThreads, 0, s, multinomial_kernel<T>)
    (probs.data<T>(), cdf.data<double>(), out.data<int64_t>(), c, num_samples, seed, offset);
  });
  check_launch("multinomial_kernel");
}

void multinomial_keys_cuda(const Tensor& probs, Tensor& keys, uint64_t seed, uint64_t offset) {
  const int64_t n = probs.numel();
  if (n == 0) return;
  cudaStream_t s = current_stream();
  visit_float(probs.dtype, "multinomial", [&](auto tag) {
    using T = typename decltype(tag)::type;
    FLOCK_LAUNCH(grid_for(n), kThreads, 0, s, multinomial_keys_kernel<T>)(probs.data<T>(), keys.data<double>(), n, seed, offset);
  });
  check_launch("multinomial_keys_kernel");
}

}  // namespace

FLOCK_REGISTER_KERNEL(multinomial, CUDA, multinomial_cuda);
FLOCK_REGISTER_KERNEL(multinomial_keys, CUDA, multinomial_keys_cuda);

}  // namespace flock::cuda
