// CPU element-wise kernels: fill, cast, arange, where and the unary predicates here; unary (and
// derivative) and binary dispatch on the dtype to their per-dtype loops (elementwise.h). The
// f32<->bf16 cast loops are compiled per instruction set (FLOCK_ISA_PARALLEL_FOR, loops.h).
#include <type_traits>
#include "../kernels.h"
#include "../scalar_math.h"
#include "bf16_vec.h"
#include "elementwise.h"
#include "loops.h"
#include "../generated/unary_codes.h"

namespace flock::cpu {
namespace {

void fill_cpu(Tensor& out, double value) {
  visit_dtype(out.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T v = from_double<T>(value);
    T* o = out.data<T>();
    parallel_for(out.numel(), kElementGrain, [&](int64_t b, int64_t e) { std::fill(o + b, o + e, v); });
  });
}

void cast_cpu(const Tensor& src, Tensor& out) {
  if (src.dtype == DType::f32 && out.dtype == DType::bf16) {
    const float* s = src.data<float>();
    bf16* d = out.data<bf16>();
    const bool cvtne = cpu_bf16_convert();
    FLOCK_ISA_PARALLEL_FOR(out.numel(), kElementGrain, b, e, { bf16_store(s + b, d + b, e - b, cvtne); });
    return;
  }
  if (src.dtype == DType::bf16 && out.dtype == DType::f32) {
    const bf16* s = src.data<bf16>();
    float* d = out.data<float>();
    FLOCK_ISA_PARALLEL_FOR(out.numel(), kElementGrain, b, e, { bf16_widen(s + b, d + b, e - b); });
    return;
  }
  visit_dtype(src.dtype, [&](auto st) {
    using S = typename decltype(st)::type;
    visit_dtype(out.dtype, [&](auto dt) {
      using D = typename decltype(dt)::type;
      const S* s = src.data<S>();
      D* d = out.data<D>();
      parallel_for(out.numel(), kElementGrain, [&](int64_t b, int64_t e) {
        if constexpr (std::is_same_v<S, D>) {
          std::copy(s + b, s + e, d + b);
        } else if constexpr (std::is_same_v<D, bool>) {
          for (int64_t i = b; i < e; ++i) d[i] = static_cast<acc_t<S>>(s[i]) != acc_t<S>(0);
        } else {
          for (int64_t i = b; i < e; ++i) d[i] = from_double<D>(to_double(s[i]));
        }
      });
    });
  });
}

void arange_cpu(Tensor& out, double start, double step) {
  visit_numeric(out.dtype, "arange", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* o = out.data<T>();
    parallel_for(out.numel(), kElementGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) o[i] = from_double<T>(start + step * static_cast<double>(i));
    });
  });
}

// isnan/isinf/isfinite: bool out; the front end answers integer inputs without a kernel.
void unary_predicate_cpu(UnaryOp op, const Tensor& x, Tensor& out) {
  visit_float(x.dtype, "unary", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* xp = x.data<T>();
    bool* o = out.data<bool>();
    parallel_for(x.numel(), kElementGrain, [&](int64_t s, int64_t e) {
      for (int64_t i = s; i < e; ++i) o[i] = math::predicate<acc_t<T>>(op, static_cast<acc_t<T>>(xp[i]));
    });
  });
}

void unary_cpu(UnaryOp op, const Tensor& x, Tensor& out, double a, double b) {
  if (unary_is_predicate(op)) return unary_predicate_cpu(op, x, out);
  visit_numeric(x.dtype, "unary", [&](auto tag) { unary_typed<typename decltype(tag)::type>(op, x, out, a, b); });
}

void unary_backward_cpu(UnaryOp op, const Tensor& x, const Tensor& gy, Tensor& gx, double a, double b) {
  visit_float(x.dtype, "unary_backward",
              [&](auto tag) { unary_backward_typed<typename decltype(tag)::type>(op, x, gy, gx, a, b); });
}

void binary_cpu(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out) {
  visit_dtype(a.dtype, [&](auto tag) { binary_typed<typename decltype(tag)::type>(op, a, b, out); });
}

void where_cpu(const Tensor& cond, const Tensor& a, const Tensor& b, Tensor& out) {
  visit_dtype(a.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const bool* cp = cond.data<bool>();
    const T* ap = a.data<T>();
    const T* bp = b.data<T>();
    T* o = out.data<T>();
    broadcast_for<3>(out.shape, {&cond.shape, &a.shape, &b.shape}, kElementGrain,
                     [&](int64_t oo, int64_t n, std::array<int64_t, 3> off, std::array<int64_t, 3> st) {
                       for (int64_t i = 0; i < n; ++i)
                         o[oo + i] = cp[off[0] + i * st[0]] ? ap[off[1] + i * st[1]] : bp[off[2] + i * st[2]];
                     });
  });
}

}  // namespace

FLOCK_REGISTER_KERNEL(fill, CPU, fill_cpu);
FLOCK_REGISTER_KERNEL(cast, CPU, cast_cpu);
FLOCK_REGISTER_KERNEL(arange, CPU, arange_cpu);
FLOCK_REGISTER_KERNEL(unary, CPU, unary_cpu);
FLOCK_REGISTER_KERNEL(unary_backward, CPU, unary_backward_cpu);
FLOCK_REGISTER_KERNEL(binary, CPU, binary_cpu);
FLOCK_REGISTER_KERNEL(where, CPU, where_cpu);

}  // namespace flock::cpu
