// CPU scatter and scatterReduce (sum, prod, mean, amax, amin; include_self as torch). Index
// values are checked as they are read; a bad one fails the op with ERR_INDEX.
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>
#include "../kernels.h"
#include "../scatter_reduce_math.h"
#include "index_plan.h"
#include "loops.h"

namespace flock::cpu {
namespace {

// Element offsets into the data tensor (out) for the elements of index/src, which are dense in
// index's shape: outer part, the dim (replaced by the index value) and inner part.
struct ScatterPlan : IndexPlan {
  using IndexPlan::IndexPlan;
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

using scatter_math::combine;
using scatter_math::identity;

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
            if constexpr (std::is_floating_point_v<C>)
              op_[i] = static_cast<T>(v / static_cast<C>(cnt[i]));
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
