// Element offsets for the ops that address a "data" tensor through an index along one dim
// (gather, scatter, scatter_add, scatterReduce): index (and src/out where dense with it) are
// dense in index's shape; data has its own, possibly larger, shape.
#pragma once
#include <cstdint>
#include <vector>
#include "../tensor.h"

namespace flock::cpu {

struct IndexPlan {
  int64_t outer = 1, n = 1, inner = 1, data_dim = 1, stride = 1;
  std::vector<int64_t> outer_off, inner_off;  // element offsets into the data tensor
  IndexPlan(const Shape& data, const Shape& index, int64_t dim) {
    const int64_t nd = static_cast<int64_t>(index.size());
    std::vector<int64_t> st(static_cast<size_t>(nd), 1);
    for (int64_t d = nd - 2; d >= 0; --d) st[d] = st[d + 1] * data[d + 1];
    for (int64_t d = 0; d < dim; ++d) outer *= index[d];
    n = index[dim];
    for (int64_t d = dim + 1; d < nd; ++d) inner *= index[d];
    data_dim = data[dim];
    stride = st[dim];
    auto offsets = [&](int64_t d0, int64_t d1, int64_t count) {
      std::vector<int64_t> offs(static_cast<size_t>(count));
      for (int64_t i = 0; i < count; ++i) {
        int64_t rem = i, off = 0;
        for (int64_t d = d1 - 1; d >= d0; --d) {
          off += (rem % index[d]) * st[d];
          rem /= index[d];
        }
        offs[i] = off;
      }
      return offs;
    };
    outer_off = offsets(0, dim, outer);
    inner_off = offsets(dim + 1, nd, inner);
  }
};

}  // namespace flock::cpu
