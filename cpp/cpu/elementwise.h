// The CPU element-wise kernels' per-dtype halves. unary, unary_backward and binary are one template
// per dtype (unary_loops.h, binary_loops.h), each instantiated in its own translation unit
// (unary_<dtype>.cc, binary_<dtype>.cc): every (op, dtype, instruction set) loop is a separate
// instantiation, and one file holding them all took 74 s to compile, which every new op paid.
// Split, they compile in parallel, and a new binary op leaves the unary files alone.
// elementwise.cc dispatches on the dtype and registers the kernels.
#pragma once
#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <utility>
#include "../dtype.h"
#include "../tensor.h"
#include "../generated/op_enums.h"
#include "bf16_vec.h"

namespace flock::cpu {

// Calls fn(std::integral_constant<int, op>) for the op in [0, Count): the op becomes a template
// parameter inside the loop, so the compiler vectorises each (op, dtype) pair.
template <class Fn, int... I>
void with_op(int op, Fn&& fn, std::integer_sequence<int, I...>) {
  ((op == I ? (fn(std::integral_constant<int, I>{}), true) : false) || ...);
}
template <int Count, class Fn>
void with_op(int op, Fn&& fn) {
  with_op(op, std::forward<Fn>(fn), std::make_integer_sequence<int, Count>{});
}

// bf16 loops work in f32 blocks of this many values, rounded back once (bf16_vec.h).
constexpr int64_t kBf16Chunk = 512;

// o[i] = f(a[i], b[i]) over [s, e) of two bf16 inputs, in f32 blocks of kBf16Chunk rounded once.
// Always inlined, so it compiles under the instruction set of the FLOCK_ISA_PARALLEL_FOR body
// that calls it.
template <class F>
inline __attribute__((always_inline)) void bf16_blocks2(const bf16* a, const bf16* b, bf16* o, int64_t s, int64_t e, bool cvtne,
                                                        F f) {
  float xa[kBf16Chunk], xb[kBf16Chunk];
  for (int64_t c = s; c < e; c += kBf16Chunk) {
    const int64_t m = std::min(kBf16Chunk, e - c);
    bf16_widen(a + c, xa, m);
    bf16_widen(b + c, xb, m);
    for (int64_t i = 0; i < m; ++i) xa[i] = f(xa[i], xb[i]);
    bf16_store(xa, o + c, m, cvtne);
  }
}

// T is a numeric dtype's type (unary), a floating one (unary_backward) or any (binary). Declared
// only: each is explicitly instantiated for its dtypes by unary_<dtype>.cc / binary_<dtype>.cc.
template <class T>
void unary_typed(UnaryOp op, const Tensor& x, Tensor& out, double a, double b);
template <class T>
void unary_backward_typed(UnaryOp op, const Tensor& x, const Tensor& gy, Tensor& gx, double a, double b);
template <class T>
void binary_typed(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out);

}  // namespace flock::cpu
