// CUDA sort (sort, argsort, topk): rows become order-preserving 64-bit keys (sort_key.h) and CUB's
// radix sort — stable — orders (key, column) pairs per row; values are then gathered by column.
// So the result equals the CPU's stable sort exactly, ties and NaN included, for any row length.
#include <climits>
#include "common.cuh"
#include "kernels.h"
#include "sort_key.h"
// CUB's NVTX ranges pull in <fcntl.h>, whose global `struct flock` clashes with our namespace.
#define CCCL_DISABLE_NVTX
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_segmented_radix_sort.cuh>

namespace flock::cuda {
namespace {

template <class T>
__device__ __forceinline__ uint64_t key_of(T v) {
  if constexpr (std::is_floating_point_v<acc_t<T>>)
    return sort_key_float(Num<T>::to_double(v));
  else if constexpr (std::is_same_v<T, bool>)
    return v ? 1 : 0;
  else
    return sort_key_int(static_cast<int64_t>(v));
}

template <class T>
__global__ void sort_keys_kernel(const T* x, uint64_t* keys, int* cols, int64_t total, int n, bool descending) {
  FLOCK_GRID_STRIDE(e, total) {
    keys[e] = sort_key_dir(key_of(x[e]), descending);
    cols[e] = static_cast<int>(e % n);
  }
}

__global__ void row_offsets_kernel(int* offsets, int64_t rows, int n) {
  FLOCK_GRID_STRIDE(r, rows + 1) offsets[r] = static_cast<int>(r * n);
}

template <class T>
__global__ void sort_gather_kernel(const T* x, const int* cols, T* values, int64_t* indices, int64_t total, int n) {
  FLOCK_GRID_STRIDE(e, total) {
    const int k = cols[e];
    values[e] = x[(e / n) * n + k];
    indices[e] = k;
  }
}

void sort_cuda(const Tensor& x, Tensor& values, Tensor& indices, int64_t rows, int64_t n, bool descending) {
  const int64_t total = rows * n;
  if (total == 0) return;
  if (total > INT_MAX) fail(Code::Shape, "sort: at most ", INT_MAX, " elements are sorted at once on CUDA, got ", total);
  cudaStream_t s = current_stream();
  const Device dev = x.device();
  // Scratch, freed on this stream after the kernels that use it.
  Tensor keys_in = empty({total}, DType::i64, dev, "sort"), keys_out = empty({total}, DType::i64, dev, "sort");
  Tensor cols_in = empty({total}, DType::i32, dev, "sort"), cols_out = empty({total}, DType::i32, dev, "sort");
  Tensor offsets = empty({rows + 1}, DType::i32, dev, "sort");
  auto* kin = reinterpret_cast<uint64_t*>(keys_in.raw());
  auto* kout = reinterpret_cast<uint64_t*>(keys_out.raw());
  int* cin = cols_in.data<int32_t>();
  int* cout = cols_out.data<int32_t>();
  int* off = offsets.data<int32_t>();
  const int ni = static_cast<int>(n), ti = static_cast<int>(total), ri = static_cast<int>(rows);
  visit(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    FLOCK_LAUNCH(grid_for(total), kThreads, 0, s, sort_keys_kernel<T>)(x.data<T>(), kin, cin, total, ni, descending);
  });
  check_launch("sort_keys_kernel");
  size_t bytes = 0;
  if (rows == 1) {
    check(cub::DeviceRadixSort::SortPairs(nullptr, bytes, kin, kout, cin, cout, ti, 0, 64, s), "sort: cub::DeviceRadixSort");
  } else {
    FLOCK_LAUNCH(grid_for(rows + 1), kThreads, 0, s, row_offsets_kernel)(off, rows, ni);
    check_launch("row_offsets_kernel");
    check(cub::DeviceSegmentedRadixSort::SortPairs(nullptr, bytes, kin, kout, cin, cout, ti, ri, off, off + 1, 0, 64, s),
          "sort: cub::DeviceSegmentedRadixSort");
  }
  Tensor temp = empty({static_cast<int64_t>(bytes ? bytes : 1)}, DType::u8, dev, "sort");
  if (rows == 1)
    check(cub::DeviceRadixSort::SortPairs(temp.raw(), bytes, kin, kout, cin, cout, ti, 0, 64, s), "sort: cub::DeviceRadixSort");
  else
    check(cub::DeviceSegmentedRadixSort::SortPairs(temp.raw(), bytes, kin, kout, cin, cout, ti, ri, off, off + 1, 0, 64, s),
          "sort: cub::DeviceSegmentedRadixSort");
  visit(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    FLOCK_LAUNCH(grid_for(total), kThreads, 0, s, sort_gather_kernel<T>)
    (x.data<T>(), cout, values.data<T>(), indices.data<int64_t>(), total, ni);
  });
  check_launch("sort_gather_kernel");
}

}  // namespace

FLOCK_REGISTER_KERNEL(sort, CUDA, sort_cuda);

}  // namespace flock::cuda
