// The simulator's cub::DeviceRadixSort: the sizing call (d_temp_storage == nullptr) reports a
// small temp size; the real call queues a stable host sort on the stream, so it reads the keys
// only after the kernels queued before it have written them, as the GPU sort would.
#pragma once
#include <cuda_runtime.h>
#include "radix_sort_host.h"

namespace cub {

struct DeviceRadixSort {
  template <class K, class V, class N>
  static cudaError_t SortPairs(void* d_temp_storage, size_t& temp_storage_bytes, const K* d_keys_in, K* d_keys_out,
                               const V* d_values_in, V* d_values_out, N num_items, int begin_bit = 0, int end_bit = sizeof(K) * 8,
                               cudaStream_t stream = 0) {
    if (!d_temp_storage) {
      temp_storage_bytes = ::sim::cub_sort::kTempBytes;
      return cudaSuccess;
    }
    const int64_t n = static_cast<int64_t>(num_items);
    ::sim::enqueue_host_op(
        stream, [=] { ::sim::cub_sort::sort_run(d_keys_in, d_keys_out, d_values_in, d_values_out, 0, n, begin_bit, end_bit); });
    return cudaSuccess;
  }

  template <class K, class N>
  static cudaError_t SortKeys(void* d_temp_storage, size_t& temp_storage_bytes, const K* d_keys_in, K* d_keys_out, N num_items,
                              int begin_bit = 0, int end_bit = sizeof(K) * 8, cudaStream_t stream = 0) {
    return SortPairs(d_temp_storage, temp_storage_bytes, d_keys_in, d_keys_out, static_cast<const char*>(nullptr),
                     static_cast<char*>(nullptr), num_items, begin_bit, end_bit, stream);
  }
};

}  // namespace cub
