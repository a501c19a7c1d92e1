// CPU recurrent cell (rnn_cell.h): one step's gates and states, forward and backward, rows split
// over the intra-op pool. f32 runs its sigmoid and tanh on vec_math.h's exp and is compiled per
// instruction set, so the loop over hidden units vectorises; f64 uses libm; bf16/f16 compute in f32.
#include <algorithm>
#include <type_traits>
#include "../rnn_cell_math.h"
#include "loops.h"
#include "vec_math.h"

namespace flock::cpu {
namespace {

template <class T>
struct HostIO {
  using C = acc_t<T>;
  static inline __attribute__((always_inline)) C load(T v) { return static_cast<C>(v); }
  static inline __attribute__((always_inline)) T store(C v) { return static_cast<T>(v); }
};

// tanh(x) = 2·sigmoid(2x) − 1: the absolute error stays at f32 rounding (≈1e-7) everywhere.
struct FastFn {
  static inline __attribute__((always_inline)) float sigmoid(float x) { return 1.0f / (1.0f + fastmath::exp_f(-x)); }
  static inline __attribute__((always_inline)) float tanh(float x) { return 2.0f / (1.0f + fastmath::exp_f(-2.0f * x)) - 1.0f; }
};

template <class T>
using FnFor = std::conditional_t<std::is_same_v<acc_t<T>, float>, FastFn, rnn::StdFn>;

template <class C, class Body>
void for_rows(int64_t rows, int64_t hidden, Body&& body) {
  // A step's rows cost ~kSlowElement adds per unit; below a few thousand units one thread is faster.
  const int64_t grain = std::max<int64_t>(1, 4096 / std::max<int64_t>(hidden, 1));
  if constexpr (std::is_same_v<C, float>) {
    FLOCK_ISA_PARALLEL_FOR(rows, grain, r0, r1, body(r0, r1););
  } else {
    parallel_for(rows, grain, body);
  }
}

template <class T>
const T* ptr(const Tensor* t) {
  return t ? t->data<T>() : nullptr;
}
template <class T>
T* mut(Tensor* t) {
  return t ? t->data<T>() : nullptr;
}

void rnn_cell_forward_cpu(RnnMode mode, const Tensor& gx, const Tensor& gh, const Tensor* b_hh, const Tensor& h_prev,
                          const Tensor* c_prev, Tensor& h, Tensor* c, Tensor* saved) {
  const int64_t rows = h.shape[0], H = h.shape[1], G = gx.shape[1], S = rnn_saved(mode) * H;
  visit_float(gx.dtype, "rnnCell", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = acc_t<T>;
    const T *xp = gx.data<T>(), *hp = gh.data<T>(), *bp = ptr<T>(b_hh), *pp = h_prev.data<T>(), *cpp = ptr<T>(c_prev);
    T *out = h.data<T>(), *cout = mut<T>(c), *sp = mut<T>(saved);
    rnn::with_mode(mode, [&](auto m) {
      constexpr RnnMode M = decltype(m)::value;
      for_rows<C>(
          rows, H, [&](int64_t r0, int64_t r1) __attribute__((always_inline)) {
            for (int64_t r = r0; r < r1; ++r)
              for (int64_t j = 0; j < H; ++j)
                rnn::forward_unit<M, HostIO<T>, FnFor<T>>(xp + r * G, hp + r * G, bp, pp + r * H, cpp ? cpp + r * H : nullptr,
                                                          out + r * H, cout ? cout + r * H : nullptr, sp ? sp + r * S : nullptr,
                                                          H, j);
          });
    });
  });
}

void rnn_cell_backward_cpu(RnnMode mode, const Tensor* gy_h, const Tensor* gy_c, const Tensor* gh_next, Tensor* carry,
                           const Tensor& h, const Tensor* c, const Tensor* c_prev, const Tensor& h_prev, const Tensor* saved,
                           Tensor& dgx, Tensor* dgh) {
  const int64_t rows = h.shape[0], H = h.shape[1], G = dgx.shape[1], S = rnn_saved(mode) * H;
  visit_float(h.dtype, "rnnCellBackward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = acc_t<T>;
    const T *gyh = ptr<T>(gy_h), *gyc = ptr<T>(gy_c), *ghn = ptr<T>(gh_next), *hp = h.data<T>(), *cp = ptr<T>(c),
            *cpp = ptr<T>(c_prev);
    const T *pp = h_prev.data<T>(), *sp = ptr<T>(saved);
    T *cr = mut<T>(carry), *dx = dgx.data<T>(), *dh = mut<T>(dgh);
    auto row = [](auto* p, int64_t r, int64_t n) { return p ? p + r * n : nullptr; };
    rnn::with_mode(mode, [&](auto m) {
      constexpr RnnMode M = decltype(m)::value;
      for_rows<C>(
          rows, H, [&](int64_t r0, int64_t r1) __attribute__((always_inline)) {
            for (int64_t r = r0; r < r1; ++r)
              for (int64_t j = 0; j < H; ++j)
                rnn::backward_unit<M, HostIO<T>, FnFor<T>>(row(gyh, r, H), row(gyc, r, H), row(ghn, r, H), row(cr, r, H),
                                                           hp + r * H, row(cp, r, H), row(cpp, r, H), pp + r * H, row(sp, r, S),
                                                           dx + r * G, row(dh, r, G), H, j);
          });
    });
  });
}

}  // namespace

FLOCK_REGISTER_KERNEL(rnn_cell_forward, CPU, rnn_cell_forward_cpu);
FLOCK_REGISTER_KERNEL(rnn_cell_backward, CPU, rnn_cell_backward_cpu);

}  // namespace flock::cpu
