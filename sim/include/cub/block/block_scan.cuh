// The simulator's cub::BlockScan: the documented block-wide scan contract over __syncthreads and
// a shared array. Each thread publishes its item, one thread scans the block's items in thread
// order, every thread reads its prefix back. Sequential order (no tree), so a floating-point sum
// rounds as a CPU loop does. As with CUB, reusing TempStorage needs a __syncthreads first.
#pragma once
#include <new>

namespace cub {

enum BlockScanAlgorithm { BLOCK_SCAN_RAKING, BLOCK_SCAN_RAKING_MEMOIZE, BLOCK_SCAN_WARP_SCANS };

struct Sum {
  template <class T>
  T operator()(const T& a, const T& b) const {
    return a + b;
  }
};

template <class T, int BLOCK_DIM_X, BlockScanAlgorithm ALGORITHM = BLOCK_SCAN_RAKING, int BLOCK_DIM_Y = 1, int BLOCK_DIM_Z = 1,
          int LEGACY_PTX_ARCH = 0>
class BlockScan {
  static constexpr int kThreads = BLOCK_DIM_X * BLOCK_DIM_Y * BLOCK_DIM_Z;

 public:
  // Raw bytes, so that it can be __shared__ (static thread_local) whatever T's constructors are.
  struct TempStorage {
    alignas(T) unsigned char raw[sizeof(T) * (kThreads + 1)];
  };

  explicit BlockScan(TempStorage& temp) : items_(reinterpret_cast<T*>(temp.raw)) {}

  void InclusiveSum(T input, T& output) {
    T total;
    InclusiveScan(input, output, Sum{}, total);
  }
  void InclusiveSum(T input, T& output, T& block_aggregate) { InclusiveScan(input, output, Sum{}, block_aggregate); }
  void ExclusiveSum(T input, T& output) {
    T total;
    ExclusiveScan(input, output, T(0), Sum{}, total);
  }
  void ExclusiveSum(T input, T& output, T& block_aggregate) { ExclusiveScan(input, output, T(0), Sum{}, block_aggregate); }

  template <class Op>
  void InclusiveScan(T input, T& output, Op op) {
    T total;
    InclusiveScan(input, output, op, total);
  }
  template <class Op>
  void InclusiveScan(T input, T& output, Op op, T& block_aggregate) {
    const int i = rank();
    new (&items_[i]) T(input);
    __syncthreads();
    if (i == 0) {
      for (int k = 1; k < kThreads; ++k) items_[k] = op(items_[k - 1], items_[k]);
      new (&items_[kThreads]) T(items_[kThreads - 1]);
    }
    __syncthreads();
    output = items_[i];
    block_aggregate = items_[kThreads];
  }

  template <class Op>
  void ExclusiveScan(T input, T& output, T initial, Op op) {
    T total;
    ExclusiveScan(input, output, initial, op, total);
  }
  template <class Op>
  void ExclusiveScan(T input, T& output, T initial, Op op, T& block_aggregate) {
    const int i = rank();
    new (&items_[i]) T(input);
    __syncthreads();
    if (i == 0) {
      // items_[k] becomes the prefix before k; the last slot holds the block's total (the
      // aggregate excludes `initial`, as CUB's does).
      T run = initial, total = items_[0];
      for (int k = 0; k < kThreads; ++k) {
        const T v = items_[k];
        if (k) total = op(total, v);
        items_[k] = run;
        run = op(run, v);
      }
      new (&items_[kThreads]) T(total);
    }
    __syncthreads();
    output = items_[i];
    block_aggregate = items_[kThreads];
  }

 private:
  static int rank() { return static_cast<int>(threadIdx.x + BLOCK_DIM_X * (threadIdx.y + BLOCK_DIM_Y * threadIdx.z)); }
  T* items_;
};

}  // namespace cub
