// CPU softmax and log-softmax over the middle axis of a [outer, dim, inner] view, computed in
// the accumulation type with the row maximum subtracted first so large logits cannot overflow.
#include <cmath>
#include <limits>
#include <vector>
#include "../kernels.h"
#include "loops.h"

namespace flock::cpu {
namespace {

template <class T>
void softmax_typed(const Tensor& x, Tensor& out, int64_t outer, int64_t dim, int64_t inner, bool log) {
  using C = acc_t<T>;
  const T* xp = x.data<T>();
  T* op = out.data<T>();
  parallel_for(outer * inner, std::max<int64_t>(1, 8192 / std::max<int64_t>(1, dim)), [&](int64_t b, int64_t e) {
    std::vector<C> tmp(static_cast<size_t>(dim));
    for (int64_t job = b; job < e; ++job) {
      const int64_t o = job / inner, i = job % inner;
      const T* src = xp + o * dim * inner + i;
      T* dst = op + o * dim * inner + i;
      C mx = -std::numeric_limits<C>::infinity();
      for (int64_t d = 0; d < dim; ++d) { tmp[d] = static_cast<C>(src[d * inner]); mx = std::max(mx, tmp[d]); }
      if (std::isinf(mx) && mx < 0) mx = 0;  // a row of -inf stays -inf / NaN-free where possible
      C sum = 0;
      for (int64_t d = 0; d < dim; ++d) { C ev = std::exp(tmp[d] - mx); sum += ev; if (!log) tmp[d] = ev; }
      if (log) {
        const C lse = mx + std::log(sum);
        for (int64_t d = 0; d < dim; ++d) dst[d * inner] = static_cast<T>(tmp[d] - lse);
      } else {
        const C inv = C(1) / sum;
        for (int64_t d = 0; d < dim; ++d) dst[d * inner] = static_cast<T>(tmp[d] * inv);
      }
    }
  });
}

void softmax_cpu(const Tensor& x, Tensor& out, int64_t outer, int64_t dim, int64_t inner, bool log) {
  visit_float(x.dtype, "softmax", [&](auto tag) {
    using T = typename decltype(tag)::type;
    softmax_typed<T>(x, out, outer, dim, inner, log);
  });
}

}  // namespace

FLOCK_REGISTER_KERNEL(softmax, CPU, softmax_cpu);

}  // namespace flock::cpu
