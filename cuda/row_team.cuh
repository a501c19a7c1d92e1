// The threads that share one row in the row-wise nn kernels (fused cross-entropy, row norm): a
// warp for short rows, so a block serves several rows with no shared memory or barriers, or the
// whole block for long ones. Reductions are all-reduces: every thread of the team gets the result.
#pragma once
#include <cstdint>
#include "common.cuh"

namespace flock::cuda {

// Rows up to this length go to a warp each.
constexpr int64_t kWarpRowMax = 1024;

template <bool kWarp>
struct RowTeam {
  __device__ __forceinline__ static int rank() {
    return kWarp ? static_cast<int>(threadIdx.x & 31) : static_cast<int>(threadIdx.x);
  }
  __device__ __forceinline__ static int size() { return kWarp ? 32 : static_cast<int>(blockDim.x); }
  __device__ __forceinline__ static int64_t first_row() {
    return kWarp ? static_cast<int64_t>(blockIdx.x) * (blockDim.x >> 5) + (threadIdx.x >> 5) : static_cast<int64_t>(blockIdx.x);
  }
  __device__ __forceinline__ static int64_t row_stride() {
    return kWarp ? static_cast<int64_t>(gridDim.x) * (blockDim.x >> 5) : static_cast<int64_t>(gridDim.x);
  }

  // Every lane ends with the same value, combined in the same order, so the team agrees bit for
  // bit. Block teams need blockDim.x a multiple of 32 and every thread of the block calling.
  template <class V, class F>
  __device__ static V all_reduce(V v, F f) {
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) v = f(v, __shfl_xor_sync(0xffffffffu, v, d));
    if constexpr (kWarp) {
      return v;
    } else {
      __shared__ V part[32];
      const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
      __syncthreads();  // a previous call may still be reading `part`
      if (lane == 0) part[warp] = v;
      __syncthreads();
      v = part[0];
      for (int w = 1; w < warps; ++w) v = f(v, part[w]);
      return v;
    }
  }
};

// Launch shape for `rows` rows of length `len`: threads per block and blocks (rows are walked
// by a grid-stride loop, so the grid is capped).
struct RowLaunch {
  bool warp;
  int threads;
  unsigned blocks;
};

inline RowLaunch row_launch(int64_t rows, int64_t len) {
  constexpr int64_t kMaxBlocks = 65535LL * 16;
  if (len <= kWarpRowMax) {
    const int64_t blocks = ceil_div(rows, kThreads / 32);
    return {true, kThreads, static_cast<unsigned>(blocks < 1 ? 1 : blocks > kMaxBlocks ? kMaxBlocks : blocks)};
  }
  return {false, len >= 8192 ? 512 : kThreads, static_cast<unsigned>(rows < 1 ? 1 : rows > kMaxBlocks ? kMaxBlocks : rows)};
}

}  // namespace flock::cuda
