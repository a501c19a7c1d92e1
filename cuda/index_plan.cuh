// Index addressing shared by gather, scatter_add, scatter and scatterReduce: index (and src/out
// where dense with it) are dense in the index's shape; the data tensor has its own contiguous
// strides, so an element's data offset is its index coordinates dotted with them, with the `dim`
// coordinate replaced by the index value.
#pragma once
#include "common.cuh"

namespace flock::cuda {

struct IndexPlan {
  int nd, dim;
  int64_t index_size[kMaxDims], data_stride[kMaxDims];
  int64_t data_dim;
};

inline IndexPlan make_index_plan(const char* op, const Shape& data, const Shape& index, int64_t dim) {
  if (index.size() > static_cast<size_t>(kMaxDims)) fail(Code::Shape, op, ": at most ", kMaxDims, " dimensions are supported");
  IndexPlan g{};
  g.nd = static_cast<int>(index.size());
  g.dim = static_cast<int>(dim);
  int64_t st = 1;
  for (int d = g.nd - 1; d >= 0; --d) {
    g.index_size[d] = index[d];
    g.data_stride[d] = st;
    st *= data[d];
  }
  g.data_dim = data[dim];
  return g;
}

__device__ __forceinline__ int64_t read_index(const void* index, bool wide, int64_t i) {
  return wide ? static_cast<const int64_t*>(index)[i] : static_cast<const int32_t*>(index)[i];
}

// Records the first bad index value of the stream (reported as ERR_INDEX at the next sync).
__device__ __forceinline__ void report_fault(IndexFault* f, int op, int64_t v, int64_t limit) {
  if (atomicCAS(&f->flag, 0, 1) == 0) {
    f->op = op;
    f->value = v;
    f->limit = limit;
  }
}

// The data offset of index element e whose index value is k.
__device__ __forceinline__ int64_t index_offset(const IndexPlan& g, int64_t e, int64_t k) {
  int64_t off = 0;
  for (int d = g.nd - 1; d >= 0; --d) {
    const int64_t c = e % g.index_size[d];
    e /= g.index_size[d];
    off += (d == g.dim ? k : c) * g.data_stride[d];
  }
  return off;
}

}  // namespace flock::cuda
