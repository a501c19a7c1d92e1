// CUDA global gradient norm and clipping over many tensors per launch: a by-value table of up to
// kMaxTensors (pointer, length, first block) entries, so a model's few hundred gradients take a
// handful of launches instead of one reduction per tensor. Partial sums are double and meet in
// one f64 accumulator (atomicAdd, or atomicMax on the bits for the max-norm: non-negative doubles
// order like their bit patterns, and a NaN's bits sort above +inf so NaN wins).
#include <cmath>
#include <vector>
#include "common.cuh"
#include "nn_kernels.h"

namespace flock::cuda {
namespace {

constexpr int kMaxTensors = 48;
constexpr int64_t kChunk = 16384;  // elements per block: 64 per thread at 256 threads

template <class P>
struct Table {
  P ptr[kMaxTensors];
  int64_t n[kMaxTensors];
  int64_t first_block[kMaxTensors + 1];
  int count;
};

template <class P>
__device__ __forceinline__ int find_tensor(const Table<P>& t, int64_t block) {
  int k = 0;
  while (k + 1 < t.count && t.first_block[k + 1] <= block) ++k;
  return k;
}

__device__ __forceinline__ double warp_sum(double v) {
  for (int d = 16; d > 0; d >>= 1) v += __shfl_down_sync(0xffffffffu, v, d);
  return v;
}
__device__ __forceinline__ double warp_max(double v) {
  for (int d = 16; d > 0; d >>= 1) {
    const double o = __shfl_down_sync(0xffffffffu, v, d);
    v = (o > v || o != o) ? o : v;
  }
  return v;
}

template <class T>
__global__ void grad_norm_partial_kernel(const Table<const T*> table, double p, int mode, double* acc) {
  const int k = find_tensor(table, blockIdx.x);
  const T* x = table.ptr[k];
  const int64_t begin = (blockIdx.x - table.first_block[k]) * kChunk;
  const int64_t end = min(table.n[k], begin + kChunk);
  double s = 0;
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    const double a = fabs(static_cast<double>(Num<T>::load(x[i])));
    if (mode == 0) s = (a > s || a != a) ? a : s;
    else if (mode == 2) s += a * a;
    else if (mode == 1) s += a;
    else s += pow(a, p);
  }
  __shared__ double part[32];
  s = mode == 0 ? warp_max(s) : warp_sum(s);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) part[warp] = s;
  __syncthreads();
  if (warp == 0) {
    s = lane < (blockDim.x >> 5) ? part[lane] : 0.0;
    s = mode == 0 ? warp_max(s) : warp_sum(s);
    if (lane == 0) {
      if (mode == 0) atomicMax(reinterpret_cast<unsigned long long*>(acc), static_cast<unsigned long long>(__double_as_longlong(s)));
      else atomicAdd(acc, s);
    }
  }
}

template <class T>
__global__ void grad_norm_finish_kernel(const double* acc, T* out, double p, int mode) {
  const double s = *acc;
  const double r = mode == 0 || mode == 1 ? s : mode == 2 ? sqrt(s) : pow(s, 1.0 / p);
  *out = Num<T>::from_double(r);
}

template <class T>
__global__ void clip_by_norm_kernel(const Table<T*> table, const T* total, double max_norm) {
  // As PyTorch's clamp(max=1): a NaN norm scales by NaN rather than being ignored.
  const double raw = max_norm / (Num<T>::to_double(*total) + 1e-6);
  if (raw >= 1.0) return;
  using C = typename Num<T>::C;
  const C coef = static_cast<C>(raw);
  const int k = find_tensor(table, blockIdx.x);
  T* x = table.ptr[k];
  const int64_t begin = (blockIdx.x - table.first_block[k]) * kChunk;
  const int64_t end = min(table.n[k], begin + kChunk);
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) x[i] = Num<T>::store(Num<T>::load(x[i]) * coef);
}

// Calls launch(table, blocks) for consecutive groups of at most kMaxTensors non-empty tensors.
template <class P, class Get, class Launch>
void for_each_table(size_t count, Get get, Launch launch) {
  Table<P> t{};
  int64_t blocks = 0;
  auto flush = [&] {
    if (t.count == 0) return;
    t.first_block[t.count] = blocks;
    launch(t, blocks);
    t = Table<P>{};
    blocks = 0;
  };
  for (size_t i = 0; i < count; ++i) {
    auto [ptr, n] = get(i);
    if (n == 0) continue;
    t.ptr[t.count] = ptr;
    t.n[t.count] = n;
    t.first_block[t.count] = blocks;
    blocks += ceil_div(n, kChunk);
    if (++t.count == kMaxTensors) flush();
  }
  flush();
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
    for_each_table<const T*>(ts.size(), [&](size_t i) { return std::pair<const T*, int64_t>{ts[i].data<T>(), ts[i].numel()}; },
                             [&](const Table<const T*>& table, int64_t blocks) {
                               grad_norm_partial_kernel<T><<<static_cast<unsigned>(blocks), kThreads, 0, s>>>(table, p, mode, a);
                               check_launch("grad_norm_partial_kernel");
                             });
    grad_norm_finish_kernel<T><<<1, 1, 0, s>>>(a, out.data<T>(), p, mode);
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
    for_each_table<T*>(ts.size(), [&](size_t i) { return std::pair<T*, int64_t>{ts[i].data<T>(), ts[i].numel()}; },
                       [&](const Table<T*>& table, int64_t blocks) {
                         clip_by_norm_kernel<T><<<static_cast<unsigned>(blocks), kThreads, 0, s>>>(table, norm, max_norm);
                         check_launch("clip_by_norm_kernel");
                       });
  });
}

}  // namespace

FLOCK_REGISTER_KERNEL(grad_norm, CUDA, grad_norm_cuda);
FLOCK_REGISTER_KERNEL(clip_by_norm, CUDA, clip_by_norm_cuda);

}  // namespace flock::cuda
