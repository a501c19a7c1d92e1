// The unary kernel and its derivative for one dtype, instantiated by unary_<dtype>.cc
// (elementwise.h). f32 and bf16 loops are compiled per instruction set (FLOCK_ISA_PARALLEL_FOR,
// loops.h) and run at the width cpu_isa() chose; bf16 ones compute blocks of kBf16Chunk values widened
// to f32 (bf16_vec.h) and round back once, as the scalar bf16 path rounds. f32 and bf16 GELU use
// vec_math.h's erf-based gelu_f / gelu_grad_f instead of libm's erf.
#pragma once
#include "../scalar_math.h"
#include "elementwise.h"
#include "loops.h"
#include "vec_math.h"
#include "../generated/unary_codes.h"

namespace flock::cpu {

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

template <class T>
void unary_typed(UnaryOp op, const Tensor& x, Tensor& out, double a, double b) {
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
        float buf[kBf16Chunk];
        for (int64_t c = s; c < e; c += kBf16Chunk) {
          const int64_t m = std::min(kBf16Chunk, e - c);
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
}

template <class T>
void unary_backward_typed(UnaryOp op, const Tensor& x, const Tensor& gy, Tensor& gx, double a, double b) {
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
}

}  // namespace flock::cpu
