// CPU scatter and scatterReduce (sum, prod, mean, amax, amin; include_self as torch). Index
// values are checked as they are read; a bad one fails the op with ERR_INDEX.
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>
#include "../kernels.h"
#include "loops.h"

namespace flock::cpu {
namespace {

// Element offsets into the data tensor (out) for the elements of index/src, which are dense in
// index's shape: outer part, the dim (replaced by the index value) and inner part.
struct ScatterPlan {
  int64_t outer = 1, n = 1, inner = 1, data_dim = 1, stride = 1;
  std::vector<int64_t> outer_off, inner_off;
  ScatterPlan(const Shape& data, const Shape& index, int64_t dim) {
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
        for (int64_t d = d1 - 1; d >= d0; --d) { off += (rem % index[d]) * st[d]; rem /= index[d]; }
        offs[i] = off;
      }
      return offs;
    };
    outer_off = offsets(0, dim, outer);
    inner_off = offsets(dim + 1, nd, inner);
  }
  // Calls f(src_linear, out_offset) for every element; outer slices write disjoint parts of out.
  template <class F>
  void for_each(const Tensor& index, F f) const {
    const bool wide = index.dtype == DType::i64;
    const void* ip = index.raw();
    parallel_for(outer, std::max<int64_t>(1, kElementGrain / std::max<int64_t>(1, n * inner)), [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o)
        for (int64_t j = 0; j < n; ++j)
          for (int64_t i = 0; i < inner; ++i) {
            const int64_t lin = (o * n + j) * inner + i;
            const int64_t k = wide ? static_cast<const int64_t*>(ip)[lin] : static_cast<const int32_t*>(ip)[lin];
            if (k < 0 || k >= data_dim) fail(Code::Index, "index ", k, " is out of range for a dimension of size ", data_dim);
            f(lin, outer_off[o] + k * stride + inner_off[i]);
          }
    });
  }
};

void scatter_cpu(Tensor& out, const Tensor& index, const Tensor& src, int64_t dim) {
  ScatterPlan g(out.shape, index.shape, dim);
  const size_t es = dtype_size(out.dtype);
  char* op = static_cast<char*>(out.raw());
  const char* sp = static_cast<const char*>(src.raw());
  g.for_each(index, [&](int64_t lin, int64_t off) { std::memcpy(op + off * es, sp + lin * es, es); });
}

template <class C>
C combine(ScatterReduceOp op, C a, C b) {
  switch (op) {
    case ScatterReduceOp::prod: return a * b;
    case ScatterReduceOp::amax:
    case ScatterReduceOp::amin:
      if constexpr (std::is_floating_point_v<C>) {
        if (a != a || b != b) return a != a ? a : b;  // NaN propagates, as torch
      }
      return op == ScatterReduceOp::amax ? (b > a ? b : a) : (b < a ? b : a);
    default: return a + b;
  }
}

template <class C>
C identity(ScatterReduceOp op) {
  switch (op) {
    case ScatterReduceOp::prod: return C(1);
    case ScatterReduceOp::amax:
      if constexpr (std::is_floating_point_v<C>) return -INFINITY;
      else return std::numeric_limits<C>::lowest();
    case ScatterReduceOp::amin:
      if constexpr (std::is_floating_point_v<C>) return INFINITY;
      else return std::numeric_limits<C>::max();
    default: return C(0);
  }
}

void scatter_reduce_cpu(ScatterReduceOp op, Tensor& out, const Tensor& index, const Tensor& src, int64_t dim, bool include_self,
                        Tensor& count) {
  ScatterPlan g(out.shape, index.shape, dim);
  visit_numeric(out.dtype, "scatterReduce", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {
      fail(Code::DType, "scatterReduce: not defined for bool tensors");
    } else {
      using C = acc_t<T>;
      T* op_ = out.data<T>();
      const T* sp = src.data<T>();
      const bool mean = op == ScatterReduceOp::mean;
      int64_t* cnt = mean ? count.data<int64_t>() : nullptr;
      if (mean) std::fill(cnt, cnt + out.numel(), int64_t(include_self ? 1 : 0));
      if (!include_self) {
        const T id = static_cast<T>(identity<C>(op));
        g.for_each(index, [&](int64_t, int64_t off) { op_[off] = id; });
      }
      g.for_each(index, [&](int64_t lin, int64_t off) {
        op_[off] = static_cast<T>(combine<C>(op, static_cast<C>(op_[off]), static_cast<C>(sp[lin])));
        if (mean) ++cnt[off];
      });
      if (mean) {
        parallel_for(out.numel(), kElementGrain, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) {
            if (cnt[i] <= 1) continue;
            const C v = static_cast<C>(op_[i]);
            if constexpr (std::is_floating_point_v<C>) op_[i] = static_cast<T>(v / static_cast<C>(cnt[i]));
            else {  // floor division, as torch's integer mean
              const int64_t a = static_cast<int64_t>(v), q = a / cnt[i];
              op_[i] = static_cast<T>(q - ((a % cnt[i] != 0 && a < 0) ? 1 : 0));
            }
          }
        });
      }
    }
  });
}

}  // namespace

FLOCK_REGISTER_KERNEL(scatter, CPU, scatter_cpu);
FLOCK_REGISTER_KERNEL(scatter_reduce, CPU, scatter_reduce_cpu);

}  // namespace flock::cpu
