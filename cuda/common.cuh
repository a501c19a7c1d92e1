// Shared pieces of the CUDA kernels: the stream a launcher runs on, error checks that turn CUDA
// failures into flock::Error, launch geometry, storage-type conversions for device code, and the
// broadcast plan that element-wise kernels walk.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <array>
#include <cstdint>
#include <string>
#include <type_traits>
#include "dtype.h"
#include "error.h"
#include "tensor.h"

namespace flock::cuda {

// The stream of the task now running on this thread (set by CudaStream::enqueue). Launchers
// issue all their work on it, so kernels stay ordered with the tensors' allocations and frees.
cudaStream_t current_stream();
// The calling thread's context stream for another CUDA device (peer copies order against it).
cudaStream_t context_stream(int device);

// Where kernels report an out-of-range index without a host round trip; the stream reads it back
// at its next sync point and rejects that sync with ERR_INDEX.
struct IndexFault {
  int flag;
  int op;  // IndexOp
  long long value;
  long long limit;
};
enum IndexOp : int {
  kIndexSelect = 1,
  kGather = 2,
  kScatterAdd = 3,
  kCrossEntropy = 4,
  kOneHot = 5,
  kScatter = 6,
  kScatterReduce = 7,
  kMaskedSelect = 8,
  kNonzero = 9
};
IndexFault* current_index_fault();

// The running task's pinned host buffer for host transfers: at least min(want, a cap of tens of
// MiB) bytes, so larger copies go through it in chunks. Reused by later tasks of the same stream
// (stream order keeps their uses apart); data is null when pinned memory cannot be had.
struct Staging {
  char* data;
  size_t bytes;
};
Staging current_staging(size_t want);

[[noreturn]] inline void fail_cuda(const char* what, cudaError_t e) {
  throw Error(e == cudaErrorMemoryAllocation ? Code::OOM : Code::Cuda, std::string(what) + ": " + cudaGetErrorString(e));
}

inline void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    cudaGetLastError();  // clear it, so the next check reports its own failure
    fail_cuda(what, e);
  }
}

// Launch errors (bad configuration, missing kernel image) surface here, not at the next sync.
inline void check_launch(const char* kernel) { check(cudaGetLastError(), kernel); }

// Every kernel launch goes through this macro: `FLOCK_LAUNCH(grid, block, shared, stream, kernel)(args)`.
// The kernel comes last so template-ids with commas need no parentheses. Under nvcc it is the
// triple-chevron launch; the CUDA simulator (FLOCKML_CUDA=SIM, sim/cuda_sim.h) defines its own,
// which runs the grid on simulated GPU threads.
#ifndef FLOCK_LAUNCH
#define FLOCK_LAUNCH(grid, block, shared, stream, ...) __VA_ARGS__<<<grid, block, shared, stream>>>
#endif

constexpr int kThreads = 256;

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Element-wise kernels use grid-stride loops, so the grid is capped and any size fits.
inline unsigned grid_for(int64_t n, int threads = kThreads) {
  const int64_t blocks = ceil_div(n, threads);
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > 65535 * 8 ? 65535 * 8 : blocks));
}

#define FLOCK_GRID_STRIDE(i, n)                                                          \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(blockDim.x) * gridDim.x)

// Storage type <-> arithmetic type in device code. The host structs flock::bf16/f16 carry only
// their bits here; their constructors are host code, so conversions go through cuda_bf16/fp16.
template <class T>
struct Num {
  using C = acc_t<T>;
  __device__ __forceinline__ static C load(T v) { return static_cast<C>(v); }
  __device__ __forceinline__ static T store(C v) { return static_cast<T>(v); }
  __device__ __forceinline__ static double to_double(T v) { return static_cast<double>(v); }
  __device__ __forceinline__ static T from_double(double v) { return static_cast<T>(v); }
};
template <>
struct Num<bf16> {
  using C = float;
  __device__ __forceinline__ static float load(bf16 v) { return __bfloat162float(__ushort_as_bfloat16(v.bits)); }
  __device__ __forceinline__ static bf16 store(float v) {
    bf16 r;
    r.bits = __bfloat16_as_ushort(__float2bfloat16(v));
    return r;
  }
  __device__ __forceinline__ static double to_double(bf16 v) { return static_cast<double>(load(v)); }
  // Through float first, as the CPU's from_double does, so double rounding matches.
  __device__ __forceinline__ static bf16 from_double(double v) { return store(static_cast<float>(v)); }
};
template <>
struct Num<f16> {
  using C = float;
  __device__ __forceinline__ static float load(f16 v) { return __half2float(__ushort_as_half(v.bits)); }
  __device__ __forceinline__ static f16 store(float v) {
    f16 r;
    r.bits = __half_as_ushort(__float2half_rn(v));
    return r;
  }
  __device__ __forceinline__ static double to_double(f16 v) { return static_cast<double>(load(v)); }
  __device__ __forceinline__ static f16 from_double(double v) { return store(static_cast<float>(v)); }
};

constexpr int kMaxDims = 16;

// Output dims coalesced (innermost last) with each input's element stride per dim, 0 where the
// input is broadcast. Merging dims keeps the per-element index arithmetic short.
template <int N>
struct Broadcast {
  int nd = 0;
  int64_t size[kMaxDims];
  int64_t stride[N][kMaxDims];

  __device__ __forceinline__ void offsets(int64_t i, int64_t* off) const {
#pragma unroll
    for (int k = 0; k < N; ++k) off[k] = 0;
    for (int d = nd - 1; d >= 0; --d) {
      const int64_t c = i % size[d];
      i /= size[d];
#pragma unroll
      for (int k = 0; k < N; ++k) off[k] += c * stride[k][d];
    }
  }
};

template <int N>
Broadcast<N> make_broadcast(const Shape& out, const std::array<const Shape*, N>& ins) {
  Broadcast<N> b;
  int64_t full[N][kMaxDims];
  const int on = static_cast<int>(out.size());
  for (int k = 0; k < N; ++k) {
    const Shape& in = *ins[k];
    int64_t s = 1;
    for (int d = 0; d < on; ++d) full[k][d] = 0;
    for (int i = static_cast<int>(in.size()) - 1, j = on - 1; i >= 0; --i, --j) {
      full[k][j] = in[i] == 1 ? 0 : s;
      s *= in[i];
    }
  }
  for (int d = 0; d < on; ++d) {
    if (out[d] == 1) continue;
    bool merge = b.nd > 0;
    for (int k = 0; k < N && merge; ++k)
      if (b.stride[k][b.nd - 1] != full[k][d] * out[d]) merge = false;
    if (merge) {
      b.size[b.nd - 1] *= out[d];
      for (int k = 0; k < N; ++k) b.stride[k][b.nd - 1] = full[k][d];
      continue;
    }
    b.size[b.nd] = out[d];
    for (int k = 0; k < N; ++k) b.stride[k][b.nd] = full[k][d];
    ++b.nd;
  }
  return b;
}

// Calls fn(type_tag<T>{}) for the dtype; same as visit_dtype, kept here so launchers read alike.
template <class Fn>
decltype(auto) visit(DType t, Fn&& fn) {
  return visit_dtype(t, std::forward<Fn>(fn));
}

}  // namespace flock::cuda
