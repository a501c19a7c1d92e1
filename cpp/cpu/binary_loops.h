// The binary kernel for one dtype, instantiated by binary_<dtype>.cc (elementwise.h): comparisons
// write bool; arithmetic runs broadcast rows (binary_loop), and same-shape f32 and bf16 operands one
// flat loop compiled per instruction set (FLOCK_ISA_PARALLEL_FOR, loops.h), bf16 in f32 blocks
// rounded once.
#pragma once
#include "../error.h"
#include "../binary_math.h"
#include "elementwise.h"
#include "loops.h"
#include "../generated/binary_codes.h"

namespace flock::cpu {

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

template <class T>
void binary_typed(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out) {
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
}

}  // namespace flock::cpu
