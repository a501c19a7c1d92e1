// Many tensors per launch: up to kMaxTensors (pointer, length, first block) entries ride in the
// kernel parameters, every block handling one fixed-size chunk of one tensor, so a model's many
// small parameters (biases, norm scales) cost a handful of launches. Large tensors simply own
// many blocks. Used by the fused optimizer steps and the global gradient norm.
#pragma once
#include <climits>
#include <cstdint>
#include <vector>
#include "common.cuh"

namespace flock::cuda {

constexpr int kMaxTensors = 48;         // keeps the parameter block near 2.3 KB, under the 4 KB classic limit
constexpr int64_t kTensorChunk = 4096;  // elements per block

// Up to kMaxTensors tensors of one dtype: list k of the step (params, grads, state...) in ptr[k].
template <class T, int kLists>
struct TensorBatch {
  T* ptr[kLists][kMaxTensors];
  int64_t numel[kMaxTensors];
  int64_t first_block[kMaxTensors + 1];  // tensor t owns blocks [first_block[t], first_block[t+1])
  int count;
};

// Which tensor and which chunk of it this block updates; a short linear scan of the parameter
// table, uniform across the block.
template <class T, int kLists>
__device__ __forceinline__ int block_tensor(const TensorBatch<T, kLists>& b, int64_t* begin, int64_t* end) {
  const int64_t blk = blockIdx.x;
  int t = 0;
  while (t + 1 < b.count && blk >= b.first_block[t + 1]) ++t;
  *begin = (blk - b.first_block[t]) * kTensorChunk;
  *end = min(b.numel[t], *begin + kTensorChunk);
  return t;
}

// Packs the tensors of dtype T into batches and calls launch(batch, blocks) for each full batch.
// lists[k] may be null (an absent optional list): its pointers are then null.
template <class T, int kLists, class Launch>
void for_each_batch(const std::vector<const std::vector<Tensor>*>& lists, DType dtype, Launch launch) {
  const std::vector<Tensor>& params = *lists[0];
  TensorBatch<T, kLists> b{};
  auto flush = [&] {
    if (b.count == 0) return;
    launch(b, b.first_block[b.count]);
    b = TensorBatch<T, kLists>{};
  };
  for (size_t k = 0; k < params.size(); ++k) {
    const Tensor& p = params[k];
    if (p.dtype != dtype || p.numel() == 0) continue;
    const int64_t blocks = ceil_div(p.numel(), kTensorChunk);
    // A launch's grid must fit in gridDim.x (2³¹ − 1 blocks).
    if (b.count == kMaxTensors || b.first_block[b.count] + blocks > INT32_MAX) flush();
    for (int l = 0; l < kLists; ++l) b.ptr[l][b.count] = lists[l] ? (*lists[l])[k].data<T>() : nullptr;
    b.numel[b.count] = p.numel();
    b.first_block[b.count + 1] = b.first_block[b.count] + blocks;
    ++b.count;
  }
  flush();
}

}  // namespace flock::cuda
