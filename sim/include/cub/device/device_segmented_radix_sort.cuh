// The simulator's cub::DeviceSegmentedRadixSort: like DeviceRadixSort, per segment
// [d_begin_offsets[s], d_end_offsets[s]); the offsets are read when the op runs, in stream order.
// Items outside every segment are left as they are in the outputs, as CUB leaves them.
#pragma once
#include <cuda_runtime.h>
#include "radix_sort_host.h"

namespace cub {

struct DeviceSegmentedRadixSort {
  template <class K, class V, class N, class S, class BeginIt, class EndIt>
  static cudaError_t SortPairs(void* d_temp_storage, size_t& temp_storage_bytes, const K* d_keys_in, K* d_keys_out,
                               const V* d_values_in, V* d_values_out, N num_items, S num_segments, BeginIt d_begin_offsets,
                               EndIt d_end_offsets, int begin_bit = 0, int end_bit = sizeof(K) * 8, cudaStream_t stream = 0) {
    (void)num_items;
    if (!d_temp_storage) {
      temp_storage_bytes = ::sim::cub_sort::kTempBytes;
      return cudaSuccess;
    }
    const int64_t segments = static_cast<int64_t>(num_segments);
    ::sim::enqueue_host_op(stream, [=] {
      for (int64_t s = 0; s < segments; ++s)
        ::sim::cub_sort::sort_run(d_keys_in, d_keys_out, d_values_in, d_values_out, static_cast<int64_t>(d_begin_offsets[s]),
                                  static_cast<int64_t>(d_end_offsets[s]), begin_bit, end_bit);
    });
    return cudaSuccess;
  }
};

}  // namespace cub
