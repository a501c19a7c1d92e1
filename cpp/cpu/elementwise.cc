// CPU element-wise kernels: fill, cast, arange, unary (and derivative), binary, where. The op is a
// template parameter inside the loop so the compiler vectorises each (op, dtype) pair; the f32
// unary loops and contiguous f32 binary loops are compiled per instruction set
// (FLOCK_ISA_PARALLEL_FOR, loops.h) and run at the width cpu_isa() chose. bf16 unary, derivative,
// contiguous binary and f32<->bf16 cast loops are too: blocks of kChunk values widened to f32
// (bf16_vec.h), computed as f32 and rounded back once, as the scalar bf16 path rounds. f32 and bf16
// GELU use vec_math.h's erf-based gelu_f / gelu_grad_f instead of libm's erf.
#include <type_traits>
#include "../kernels.h"
#include "../scalar_math.h"
#include "bf16_vec.h"
#include "loops.h"
#include "vec_math.h"
#include "../generated/unary_codes.h"
#include "../generated/binary_codes.h"

namespace flock::cpu {
namespace {

template <class Fn, int... I>
void with_op(int op, Fn&& fn, std::integer_sequence<int, I...>) {
  ((op == I ? (fn(std::integral_constant<int, I>{}), true) : false) || ...);
}
template <int Count, class Fn>
void with_op(int op, Fn&& fn) {
  with_op(op, std::forward<Fn>(fn), std::make_integer_sequence<int, Count>{});
}

constexpr int64_t kChunk = 512;

// o[i] = f(a[i], b[i]) over [s, e) of two bf16 inputs, in f32 blocks of kChunk rounded once.
// Always inlined, so it compiles under the instruction set of the FLOCK_ISA_PARALLEL_FOR body
// that calls it.
template <class F>
inline __attribute__((always_inline)) void bf16_blocks2(const bf16* a, const bf16* b, bf16* o, int64_t s, int64_t e, bool cvtne,
                                                        F f) {
  float xa[kChunk], xb[kChunk];
  for (int64_t c = s; c < e; c += kChunk) {
    const int64_t m = std::min(kChunk, e - c);
    bf16_widen(a + c, xa, m);
    bf16_widen(b + c, xb, m);
    for (int64_t i = 0; i < m; ++i) xa[i] = f(xa[i], xb[i]);
    bf16_store(xa, o + c, m, cvtne);
  }
}

// unary / derivative in f32: GELU from vec_math.h (vectorisable), the rest from scalar_math.h.
template <UnaryOp kOp>
inline __attribute__((always_inline)) float unary_f32(float x, float a, float b) {
  if constexpr (kOp == UnaryOp::gelu)
    return fastmath::gelu_f(x);
  else
    return math::unary<float>(kOp, x, a, b);
}
template <UnaryOp kOp>
inline __attribute__((always_inline)) float derivative_f32(float x, float a, float b) {
  if constexpr (kOp == UnaryOp::gelu)
    return fastmath::gelu_grad_f(x);
  else
    return math::unary_derivative<float>(kOp, x, a, b);
}

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
          for (int64_t i = s; i < e; ++i) op_[i] = unary_f32<kOp>(xp[i], ca, cb);
        });
      } else if constexpr (std::is_same_v<T, bf16>) {
        const bool cvtne = cpu_bf16_convert();
        FLOCK_ISA_PARALLEL_FOR(x.numel(), kElementGrain, s, e, {
          float buf[kChunk];
          for (int64_t c = s; c < e; c += kChunk) {
            const int64_t m = std::min(kChunk, e - c);
            bf16_widen(xp + c, buf, m);
            for (int64_t i = 0; i < m; ++i) buf[i] = unary_f32<kOp>(buf[i], ca, cb);
            bf16_store(buf, op_ + c, m, cvtne);
          }
        });
      } else if constexpr (std::is_same_v<C, float> && kOp == UnaryOp::gelu) {
        parallel_for(x.numel(), kElementGrain, [&](int64_t s, int64_t e) {
          for (int64_t i = s; i < e; ++i) op_[i] = static_cast<T>(fastmath::gelu_f(static_cast<float>(xp[i])));
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
          for (int64_t i = s; i < e; ++i) o[i] = gp[i] * derivative_f32<kOp>(xp[i], ca, cb);
        });
      } else if constexpr (std::is_same_v<T, bf16>) {
        const bool cvtne = cpu_bf16_convert();
        FLOCK_ISA_PARALLEL_FOR(x.numel(), kElementGrain, s, e, {
          bf16_blocks2(
              gp, xp, o, s, e,
              cvtne, [&](float g, float xv) __attribute__((always_inline)) { return g * derivative_f32<kOp>(xv, ca, cb); });
        });
      } else if constexpr (std::is_same_v<C, float> && kOp == UnaryOp::gelu) {
        parallel_for(x.numel(), kElementGrain, [&](int64_t s, int64_t e) {
          for (int64_t i = s; i < e; ++i)
            o[i] = static_cast<T>(static_cast<C>(gp[i]) * fastmath::gelu_grad_f(static_cast<C>(xp[i])));
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
        if constexpr (std::is_same_v<T, bf16>) {
          if (a.shape == out.shape && b.shape == out.shape) {  // no broadcast: f32 blocks, one rounding
            const bf16* ap = a.data<bf16>();
            const bf16* bp = b.data<bf16>();
            bf16* op_ = out.data<bf16>();
            const bool cvtne = cpu_bf16_convert();
            FLOCK_ISA_PARALLEL_FOR(out.numel(), kElementGrain, s, e, {
              bf16_blocks2(
                  ap, bp, op_, s, e, cvtne,
                  [](float u, float v) __attribute__((always_inline)) { return math::binary<float>(kOp, u, v); });
            });
            return;
          }
        }
        binary_loop<T, T>(a, b, out,
                          [](T x, T y) { return static_cast<T>(math::binary<C>(kOp, static_cast<C>(x), static_cast<C>(y))); });
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
