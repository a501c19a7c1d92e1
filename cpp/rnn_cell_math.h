// The per-unit formulas of the fused recurrent cell (rnn_cell.h), shared by the CPU and CUDA
// kernels so both compute the same thing. Each function handles hidden unit j of one batch row;
// pointers are at the row's start. `IO` loads a stored value into the compute type C and stores
// one back (bf16/f16 compute in f32); `Fn` gives sigmoid and tanh (the CPU's f32 copy uses
// vec_math.h's exp, which vectorises; everywhere else the standard ones).
#pragma once
#include <cmath>
#include "rnn_cell.h"
#include "scalar_math.h"

namespace flock::rnn {

struct StdFn {
  template <class C>
  static FLOCK_HD C sigmoid(C x) {
    return C(1) / (C(1) + std::exp(-x));
  }
  template <class C>
  static FLOCK_HD C tanh(C x) {
    return std::tanh(x);
  }
};

template <RnnMode M, class IO, class Fn, class T>
FLOCK_HD void forward_unit(const T* gx, const T* gh, const T* bh, const T* hp, const T* cp, T* h, T* c, T* saved, int64_t H,
                           int64_t j) {
  using C = typename IO::C;
  // The pre-activation of gate k from both projections; for GRU's n gate the hidden part stays apart.
  auto xpart = [&](int64_t k) { return IO::load(gx[k * H + j]); };
  auto hpart = [&](int64_t k) { return IO::load(gh[k * H + j]) + (bh ? IO::load(bh[k * H + j]) : C(0)); };
  if constexpr (M == RnnMode::rnn_tanh || M == RnnMode::rnn_relu) {
    const C pre = xpart(0) + hpart(0);
    h[j] = IO::store(M == RnnMode::rnn_tanh ? Fn::tanh(pre) : (pre > C(0) ? pre : C(0)));
  } else if constexpr (M == RnnMode::lstm) {
    const C i = Fn::sigmoid(xpart(0) + hpart(0)), f = Fn::sigmoid(xpart(1) + hpart(1));
    const C g = Fn::tanh(xpart(2) + hpart(2)), o = Fn::sigmoid(xpart(3) + hpart(3));
    const C cn = f * IO::load(cp[j]) + i * g;
    c[j] = IO::store(cn);
    h[j] = IO::store(o * Fn::tanh(cn));
    if (saved) {
      saved[j] = IO::store(i);
      saved[H + j] = IO::store(f);
      saved[2 * H + j] = IO::store(g);
      saved[3 * H + j] = IO::store(o);
    }
  } else {
    const C r = Fn::sigmoid(xpart(0) + hpart(0)), z = Fn::sigmoid(xpart(1) + hpart(1));
    const C hn = hpart(2);
    const C n = Fn::tanh(xpart(2) + r * hn);
    h[j] = IO::store((C(1) - z) * n + z * IO::load(hp[j]));
    if (saved) {
      saved[j] = IO::store(r);
      saved[H + j] = IO::store(z);
      saved[2 * H + j] = IO::store(n);
      saved[3 * H + j] = IO::store(hn);
    }
  }
}

// See rnn_cell_backward in rnn_cell.h; `carry` is read and written at j only.
template <RnnMode M, class IO, class Fn, class T>
FLOCK_HD void backward_unit(const T* gyh, const T* gyc, const T* ghn, T* carry, const T* h, const T* c, const T* cp, const T* hp,
                            const T* saved, T* dgx, T* dgh, int64_t H, int64_t j) {
  using C = typename IO::C;
  C dh = (gyh ? IO::load(gyh[j]) : C(0)) + (ghn ? IO::load(ghn[j]) : C(0));
  if constexpr (M == RnnMode::rnn_tanh) {
    const C y = IO::load(h[j]);
    dgx[j] = IO::store(dh * (C(1) - y * y));
  } else if constexpr (M == RnnMode::rnn_relu) {
    dgx[j] = IO::store(IO::load(h[j]) > C(0) ? dh : C(0));
  } else if constexpr (M == RnnMode::lstm) {
    const C i = IO::load(saved[j]), f = IO::load(saved[H + j]), g = IO::load(saved[2 * H + j]), o = IO::load(saved[3 * H + j]);
    const C tc = Fn::tanh(IO::load(c[j]));
    const C dc = IO::load(carry[j]) + (gyc ? IO::load(gyc[j]) : C(0)) + dh * o * (C(1) - tc * tc);
    dgx[j] = IO::store(dc * g * i * (C(1) - i));
    dgx[H + j] = IO::store(dc * IO::load(cp[j]) * f * (C(1) - f));
    dgx[2 * H + j] = IO::store(dc * i * (C(1) - g * g));
    dgx[3 * H + j] = IO::store(dh * tc * o * (C(1) - o));
    carry[j] = IO::store(dc * f);
  } else {
    dh += IO::load(carry[j]);
    const C r = IO::load(saved[j]), z = IO::load(saved[H + j]), n = IO::load(saved[2 * H + j]), hn = IO::load(saved[3 * H + j]);
    const C dpn = dh * (C(1) - z) * (C(1) - n * n);
    const C dpr = dpn * hn * r * (C(1) - r);
    const C dpz = dh * (IO::load(hp[j]) - n) * z * (C(1) - z);
    dgx[j] = dgh[j] = IO::store(dpr);
    dgx[H + j] = dgh[H + j] = IO::store(dpz);
    dgx[2 * H + j] = IO::store(dpn);
    dgh[2 * H + j] = IO::store(dpn * r);
    carry[j] = IO::store(dh * z);
  }
}

// Calls fn(std::integral_constant<RnnMode, m>{}) for the run-time mode m.
template <class Fn>
void with_mode(RnnMode m, Fn&& fn) {
  switch (m) {
    case RnnMode::rnn_tanh:
      return fn(std::integral_constant<RnnMode, RnnMode::rnn_tanh>{});
    case RnnMode::rnn_relu:
      return fn(std::integral_constant<RnnMode, RnnMode::rnn_relu>{});
    case RnnMode::lstm:
      return fn(std::integral_constant<RnnMode, RnnMode::lstm>{});
    case RnnMode::gru:
      return fn(std::integral_constant<RnnMode, RnnMode::gru>{});
    default:
      fail(Code::Arg, "rnnCell: unknown mode");
  }
}

}  // namespace flock::rnn
