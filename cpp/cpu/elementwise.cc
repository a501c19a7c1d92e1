// CPU element-wise kernels: fill, cast, arange, unary (and derivative), binary, where. The op is a
// template parameter inside the loop so the compiler vectorises each (op, dtype) pair; the f32
// unary loops and contiguous f32 binary loops are compiled per instruction set
// (FLOCK_ISA_PARALLEL_FOR, loops.h) and run at the width cpu_isa() chose.
#include <type_traits>
#include "../kernels.h"
#include "../scalar_math.h"
#include "loops.h"

namespace flock::cpu {
namespace {

template <class Fn, int... I>
void with_op(int op, Fn&& fn, std::integer_sequence<int, I...>) {
  ((op == I ? (fn(std::integral_constant<int, I>{}), true) : false) || ...);
}
template <int Count, class Fn>
void with_op(int op, Fn&& fn) { with_op(op, std::forward<Fn>(fn), std::make_integer_sequence<int, Count>{}); }

void fill_cpu(Tensor& out, double value) {
  visit_dtype(out.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T v = from_double<T>(value);
    T* o = out.data<T>();
    parallel_for(out.numel(), kElementGrain, [&](int64_t b, int64_t e) { std::fill(o + b, o + e, v); });
  });
}

void cast_cpu(const Tensor& src, Tensor& out) {
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
  visit_numeric(x.dtype, "unary", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = std::conditional_t<std::is_integral_v<T>, double, acc_t<T>>;
    const T* xp = x.data<T>();
    T* op_ = out.data<T>();
    const C ca = static_cast<C>(a), cb = static_cast<C>(b);
    with_op<static_cast<int>(UnaryOp::count)>(static_cast<int>(op), [&](auto OP) {
      constexpr UnaryOp kOp = static_cast<UnaryOp>(decltype(OP)::value);
      if constexpr (std::is_same_v<T, float>) {
        FLOCK_ISA_PARALLEL_FOR(x.numel(), kElementGrain, s, e, {
          for (int64_t i = s; i < e; ++i) op_[i] = math::unary<float>(kOp, xp[i], ca, cb);
        });
      } else {
        parallel_for(x.numel(), kElementGrain, [&](int64_t s, int64_t e) {
          for (int64_t i = s; i < e; ++i)
            op_[i] = static_cast<T>(math::unary<C>(kOp, static_cast<C>(static_cast<acc_t<T>>(xp[i])), ca, cb));
        });
      }
    });
  });
}

void unary_backward_cpu(UnaryOp op, const Tensor& x, const Tensor& gy, Tensor& gx, double a, double b) {
  visit_float(x.dtype, "unary_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = acc_t<T>;
    const T* xp = x.data<T>();
    const T* gp = gy.data<T>();
    T* o = gx.data<T>();
    const C ca = static_cast<C>(a), cb = static_cast<C>(b);
    with_op<static_cast<int>(UnaryOp::count)>(static_cast<int>(op), [&](auto OP) {
      constexpr UnaryOp kOp = static_cast<UnaryOp>(decltype(OP)::value);
      if constexpr (std::is_same_v<T, float>) {
        FLOCK_ISA_PARALLEL_FOR(x.numel(), kElementGrain, s, e, {
          for (int64_t i = s; i < e; ++i) o[i] = gp[i] * math::unary_derivative<float>(kOp, xp[i], ca, cb);
        });
      } else {
        parallel_for(x.numel(), kElementGrain, [&](int64_t s, int64_t e) {
          for (int64_t i = s; i < e; ++i)
            o[i] = static_cast<T>(static_cast<C>(gp[i]) * math::unary_derivative<C>(kOp, static_cast<C>(xp[i]), ca, cb));
        });
      }
    });
  });
}

template <class T, class O, class F>
void binary_loop(const Tensor& a, const Tensor& b, Tensor& out, F f) {
  const T* ap = a.data<T>();
  const T* bp = b.data<T>();
  O* o = out.data<O>();
  broadcast_for<2>(out.shape, {&a.shape, &b.shape}, kElementGrain,
                   [&](int64_t oo, int64_t n, std::array<int64_t, 2> off, std::array<int64_t, 2> st) {
    const T* x = ap + off[0];
    const T* y = bp + off[1];
    O* z = o + oo;
    if (st[0] == 1 && st[1] == 1) {
      for (int64_t i = 0; i < n; ++i) z[i] = f(x[i], y[i]);
    } else if (st[0] == 1 && st[1] == 0) {
      const T yv = y[0];
      for (int64_t i = 0; i < n; ++i) z[i] = f(x[i], yv);
    } else if (st[0] == 0 && st[1] == 1) {
      const T xv = x[0];
      for (int64_t i = 0; i < n; ++i) z[i] = f(xv, y[i]);
    } else {
      for (int64_t i = 0; i < n; ++i) z[i] = f(x[i * st[0]], y[i * st[1]]);
    }
  });
}

void binary_cpu(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out) {
  visit_dtype(a.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = acc_t<T>;
    with_op<static_cast<int>(BinaryOp::count)>(static_cast<int>(op), [&](auto OP) {
      constexpr BinaryOp kOp = static_cast<BinaryOp>(decltype(OP)::value);
      if constexpr (binary_is_comparison(kOp)) {
        binary_loop<T, bool>(a, b, out, [](T x, T y) { return math::compare<C>(kOp, static_cast<C>(x), static_cast<C>(y)); });
      } else if constexpr (std::is_same_v<T, bool>) {
        fail(Code::DType, "binary: arithmetic is not defined for bool tensors");
      } else {
        if constexpr (std::is_same_v<T, float>) {
          if (a.shape == out.shape && b.shape == out.shape) {  // no broadcast: one flat loop
            const float* ap = a.data<float>();
            const float* bp = b.data<float>();
            float* op_ = out.data<float>();
            FLOCK_ISA_PARALLEL_FOR(out.numel(), kElementGrain, s, e, {
              for (int64_t i = s; i < e; ++i) op_[i] = math::binary<float>(kOp, ap[i], bp[i]);
            });
            return;
          }
        }
        binary_loop<T, T>(a, b, out, [](T x, T y) { return static_cast<T>(math::binary<C>(kOp, static_cast<C>(x), static_cast<C>(y))); });
      }
    });
  });
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
