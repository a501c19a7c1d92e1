// CPU fused optimizer steps: one queued call updates every parameter of a group in place, in the
// formulas of torch.optim (Adam/AdamW with bias correction and amsgrad, SGD with momentum/dampening/
// Nesterov, RMSprop plain/centered with momentum, Adagrad with lr decay; all with maximize). bf16/f16 params are updated through
// their f32 master weights: the low-precision gradient is widened as it is read, the master and the f32 state are updated, and
// the rounded master is written back to the param in the same pass over each chunk.
#include <cmath>
#include "../low_precision_round.h"
#include "../nn_kernels.h"
#include "../philox.h"
#include "loops.h"

namespace flock::cpu {
namespace {

// The per-element update with the configuration's branches resolved at compile time and the
// arrays declared unaliased, so the loop vectorises (sqrt and division included). `sign` is -1 for
// maximize: multiplying by ±1 is exact, so it needs no variant of its own. G is the gradient's
// storage type (T itself, or bf16/f16 with T = float for master weights).
template <class T, class G, bool Decoupled, bool L2, bool Amsgrad>
[[gnu::always_inline]] inline void adam_range(T* __restrict pp, const G* __restrict gp, T* __restrict mp, T* __restrict vp,
                                              T* __restrict mvp, int64_t b, int64_t e, T step_size, T b1, T b2, T eps, T wd,
                                              T rbc2, T decay, T sign) {
  for (int64_t i = b; i < e; ++i) {
    T gi = sign * static_cast<T>(static_cast<acc_t<G>>(gp[i]));
    if constexpr (Decoupled) pp[i] *= decay;
    if constexpr (L2) gi += wd * pp[i];
    const T mi = b1 * mp[i] + (1 - b1) * gi, vi = b2 * vp[i] + (1 - b2) * gi * gi;
    mp[i] = mi;
    vp[i] = vi;
    T vd = vi;
    if constexpr (Amsgrad) {
      // torch.optim: the running maximum of the raw (not bias-corrected) second moments.
      vd = mvp[i] > vi ? mvp[i] : vi;
      mvp[i] = vd;
    }
    pp[i] -= step_size * mi / (std::sqrt(vd) * rbc2 + eps);
  }
}

template <class T, class G, bool Amsgrad>
[[gnu::always_inline]] inline void adam_dispatch(T* pp, const G* gp, T* mp, T* vp, T* mvp, int64_t b, int64_t e, bool decoupled,
                                                 bool l2, T step_size, T b1, T b2, T eps, T wd, T rbc2, T decay, T sign) {
  if (decoupled)
    adam_range<T, G, true, false, Amsgrad>(pp, gp, mp, vp, mvp, b, e, step_size, b1, b2, eps, wd, rbc2, decay, sign);
  else if (l2)
    adam_range<T, G, false, true, Amsgrad>(pp, gp, mp, vp, mvp, b, e, step_size, b1, b2, eps, wd, rbc2, decay, sign);
  else
    adam_range<T, G, false, false, Amsgrad>(pp, gp, mp, vp, mvp, b, e, step_size, b1, b2, eps, wd, rbc2, decay, sign);
}

// How a master weight reaches its low-precision copy; `base` is the tensor's first element among
// all elements of the call (the Philox counter of element j is offset + (base + j) / 4).
struct CopyRound {
  bool stochastic;
  uint64_t seed, offset, base;
};

template <class L>
void write_copy(L* __restrict out, const float* __restrict master, int64_t b, int64_t e, const CopyRound& r) {
  if (!r.stochastic) {
    for (int64_t i = b; i < e; ++i) out[i] = L(master[i]);
    return;
  }
  uint64_t group = ~uint64_t(0);
  Philox4 words{};
  for (int64_t i = b; i < e; ++i) {
    const uint64_t j = r.base + static_cast<uint64_t>(i);
    if (j / 4 != group) {
      group = j / 4;
      words = philox(r.seed, r.offset + group);
    }
    const uint32_t w = words.v[j % 4];
    const L nearest(master[i]);
    L v;
    if constexpr (std::is_same_v<L, bf16>)
      v.bits = bf16_bits_stochastic(master[i], w, nearest.bits);
    else
      v.bits = f16_bits_stochastic(master[i], w, nearest.bits);
    out[i] = v;
  }
}

// `G` is T for f32/f64 params; for bf16/f16 params T = float, `pp` the master and `copy` the param.
template <class T, class G>
void adam_one(T* pp, const G* gp, Tensor& m, Tensor& v, Tensor* max_v, G* copy, const CopyRound& r, int64_t n,
              const AdamConfig& c) {
  T* mp = m.data<T>();
  T* vp = v.data<T>();
  T* mvp = max_v ? max_v->data<T>() : nullptr;
  const double bc1 = 1 - std::pow(c.beta1, double(c.step)), bc2 = 1 - std::pow(c.beta2, double(c.step));
  const T step_size = T(c.lr / bc1), b1 = T(c.beta1), b2 = T(c.beta2), eps = T(c.eps), wd = T(c.weight_decay);
  const T rbc2 = T(1 / std::sqrt(bc2)), decay = T(1 - c.lr * c.weight_decay), sign = T(c.maximize ? -1 : 1);
  const bool l2 = !c.decoupled && c.weight_decay != 0;
  if constexpr (std::is_same_v<T, float> && std::is_same_v<G, float>) {
    // f32 params: the update compiled per instruction set (loops.h).
    FLOCK_ISA_PARALLEL_FOR(n, kElementGrain, b, e, {
      if (mvp)
        adam_dispatch<T, G, true>(pp, gp, mp, vp, mvp, b, e, c.decoupled, l2, step_size, b1, b2, eps, wd, rbc2, decay, sign);
      else
        adam_dispatch<T, G, false>(pp, gp, mp, vp, mvp, b, e, c.decoupled, l2, step_size, b1, b2, eps, wd, rbc2, decay, sign);
    });
    return;
  }
  parallel_for(n, kElementGrain, [&](int64_t b, int64_t e) {
    if (mvp)
      adam_dispatch<T, G, true>(pp, gp, mp, vp, mvp, b, e, c.decoupled, l2, step_size, b1, b2, eps, wd, rbc2, decay, sign);
    else
      adam_dispatch<T, G, false>(pp, gp, mp, vp, mvp, b, e, c.decoupled, l2, step_size, b1, b2, eps, wd, rbc2, decay, sign);
    if constexpr (!std::is_same_v<T, G>) write_copy(copy, pp, b, e, r);
  });
}

template <class T, class G>
void sgd_one(T* __restrict pp, const G* __restrict gp, Tensor* buf, G* copy, const CopyRound& r, int64_t n, const SgdConfig& c) {
  T* __restrict bp = buf ? buf->data<T>() : nullptr;
  const T lr = T(c.lr), mom = T(c.momentum), damp = T(1 - c.dampening), wd = T(c.weight_decay), sign = T(c.maximize ? -1 : 1);
  parallel_for(n, kElementGrain, [&](int64_t b, int64_t e) {
    if (!bp) {
      for (int64_t i = b; i < e; ++i) pp[i] -= lr * (sign * static_cast<T>(static_cast<acc_t<G>>(gp[i])) + wd * pp[i]);
    } else {
      for (int64_t i = b; i < e; ++i) {
        T d = sign * static_cast<T>(static_cast<acc_t<G>>(gp[i])) + wd * pp[i];
        const T bi = c.first_step ? d : mom * bp[i] + damp * d;
        bp[i] = bi;
        d = c.nesterov ? d + mom * bi : bi;
        pp[i] -= lr * d;
      }
    }
    if constexpr (!std::is_same_v<T, G>) write_copy(copy, pp, b, e, r);
  });
}

// RMSprop in torch.optim's order of operations: the decayed gradient feeds the averages, the
// denominator is sqrt(square_avg [- grad_avg²]) + eps, momentum accumulates grad / denominator.
template <class T, class G, bool Centered, bool Momentum>
[[gnu::always_inline]] inline void rmsprop_range(T* __restrict pp, const G* __restrict gp, T* __restrict sq, T* __restrict ga,
                                                 T* __restrict bp, int64_t b, int64_t e, T lr, T alpha, T one_minus_alpha, T eps,
                                                 T wd, T mom, T sign) {
  for (int64_t i = b; i < e; ++i) {
    const T gi = sign * static_cast<T>(static_cast<acc_t<G>>(gp[i])) + wd * pp[i];
    const T si = alpha * sq[i] + one_minus_alpha * gi * gi;
    sq[i] = si;
    T avg;
    if constexpr (Centered) {
      const T ai = alpha * ga[i] + one_minus_alpha * gi;
      ga[i] = ai;
      avg = std::sqrt(si - ai * ai) + eps;
    } else {
      avg = std::sqrt(si) + eps;
    }
    if constexpr (Momentum) {
      const T bi = mom * bp[i] + gi / avg;
      bp[i] = bi;
      pp[i] -= lr * bi;
    } else {
      pp[i] -= lr * (gi / avg);
    }
  }
}

template <class T, class G>
void rmsprop_one(T* pp, const G* gp, Tensor& sq, Tensor* ga, Tensor* buf, G* copy, const CopyRound& r, int64_t n,
                 const RmspropConfig& c) {
  T* sqp = sq.data<T>();
  T* gap = ga ? ga->data<T>() : nullptr;
  T* bp = buf ? buf->data<T>() : nullptr;
  const T lr = T(c.lr), alpha = T(c.alpha), oma = T(1 - c.alpha), eps = T(c.eps), wd = T(c.weight_decay), mom = T(c.momentum);
  const T sign = T(c.maximize ? -1 : 1);
  parallel_for(n, kElementGrain, [&](int64_t b, int64_t e) {
    if (gap && bp)
      rmsprop_range<T, G, true, true>(pp, gp, sqp, gap, bp, b, e, lr, alpha, oma, eps, wd, mom, sign);
    else if (gap)
      rmsprop_range<T, G, true, false>(pp, gp, sqp, gap, bp, b, e, lr, alpha, oma, eps, wd, mom, sign);
    else if (bp)
      rmsprop_range<T, G, false, true>(pp, gp, sqp, gap, bp, b, e, lr, alpha, oma, eps, wd, mom, sign);
    else
      rmsprop_range<T, G, false, false>(pp, gp, sqp, gap, bp, b, e, lr, alpha, oma, eps, wd, mom, sign);
    if constexpr (!std::is_same_v<T, G>) write_copy(copy, pp, b, e, r);
  });
}

// Adagrad: sum += g², p -= clr · g / (sqrt(sum) + eps), clr decayed by the step in double as torch.optim does.
template <class T, class G>
void adagrad_one(T* __restrict pp, const G* __restrict gp, Tensor& sum, G* copy, const CopyRound& r, int64_t n,
                 const AdagradConfig& c) {
  T* __restrict sp = sum.data<T>();
  const T clr = T(c.lr / (1 + double(c.step - 1) * c.lr_decay)), eps = T(c.eps), wd = T(c.weight_decay),
          sign = T(c.maximize ? -1 : 1);
  parallel_for(n, kElementGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const T gi = sign * static_cast<T>(static_cast<acc_t<G>>(gp[i])) + wd * pp[i];
      const T si = sp[i] + gi * gi;
      sp[i] = si;
      pp[i] -= clr * (gi / (std::sqrt(si) + eps));
    }
    if constexpr (!std::is_same_v<T, G>) write_copy(copy, pp, b, e, r);
  });
}

// Calls fn(tag) with the param's storage type: float/double update in place, bf16/f16 through
// their masters (the kernel's front end has checked which applies).
template <class Fn>
void visit_param(const Tensor& p, Fn&& fn) {
  visit_float(p.dtype, "optimizer step", std::forward<Fn>(fn));
}

void adam_cpu(std::vector<Tensor>& ps, const std::vector<Tensor>& gs, std::vector<Tensor>& ms, std::vector<Tensor>& vs,
              std::vector<Tensor>& mvs, std::vector<Tensor>& masters, const AdamConfig& c) {
  uint64_t base = 0;
  for (size_t k = 0; k < ps.size(); ++k) {
    Tensor* mv = c.amsgrad ? &mvs[k] : nullptr;
    const CopyRound r{c.stochastic_rounding, c.seed, c.offset, base};
    const int64_t n = ps[k].numel();
    base += static_cast<uint64_t>(n);
    visit_param(ps[k], [&](auto tag) {
      using P = typename decltype(tag)::type;
      if constexpr (std::is_same_v<P, float> || std::is_same_v<P, double>)
        adam_one<P, P>(ps[k].data<P>(), gs[k].data<P>(), ms[k], vs[k], mv, nullptr, r, n, c);
      else
        adam_one<float, P>(masters[k].data<float>(), gs[k].data<P>(), ms[k], vs[k], mv, ps[k].data<P>(), r, n, c);
    });
  }
}

void sgd_cpu(std::vector<Tensor>& ps, const std::vector<Tensor>& gs, std::vector<Tensor>& bufs, std::vector<Tensor>& masters,
             const SgdConfig& c) {
  uint64_t base = 0;
  for (size_t k = 0; k < ps.size(); ++k) {
    Tensor* buf = bufs.empty() ? nullptr : &bufs[k];
    const CopyRound r{c.stochastic_rounding, c.seed, c.offset, base};
    const int64_t n = ps[k].numel();
    base += static_cast<uint64_t>(n);
    visit_param(ps[k], [&](auto tag) {
      using P = typename decltype(tag)::type;
      if constexpr (std::is_same_v<P, float> || std::is_same_v<P, double>)
        sgd_one<P, P>(ps[k].data<P>(), gs[k].data<P>(), buf, nullptr, r, n, c);
      else
        sgd_one<float, P>(masters[k].data<float>(), gs[k].data<P>(), buf, ps[k].data<P>(), r, n, c);
    });
  }
}

void rmsprop_cpu(std::vector<Tensor>& ps, const std::vector<Tensor>& gs, std::vector<Tensor>& sqs, std::vector<Tensor>& gas,
                 std::vector<Tensor>& bufs, std::vector<Tensor>& masters, const RmspropConfig& c) {
  uint64_t base = 0;
  for (size_t k = 0; k < ps.size(); ++k) {
    Tensor* ga = gas.empty() ? nullptr : &gas[k];
    Tensor* buf = bufs.empty() ? nullptr : &bufs[k];
    const CopyRound r{c.stochastic_rounding, c.seed, c.offset, base};
    const int64_t n = ps[k].numel();
    base += static_cast<uint64_t>(n);
    visit_param(ps[k], [&](auto tag) {
      using P = typename decltype(tag)::type;
      if constexpr (std::is_same_v<P, float> || std::is_same_v<P, double>)
        rmsprop_one<P, P>(ps[k].data<P>(), gs[k].data<P>(), sqs[k], ga, buf, nullptr, r, n, c);
      else
        rmsprop_one<float, P>(masters[k].data<float>(), gs[k].data<P>(), sqs[k], ga, buf, ps[k].data<P>(), r, n, c);
    });
  }
}

void adagrad_cpu(std::vector<Tensor>& ps, const std::vector<Tensor>& gs, std::vector<Tensor>& sums, std::vector<Tensor>& masters,
                 const AdagradConfig& c) {
  uint64_t base = 0;
  for (size_t k = 0; k < ps.size(); ++k) {
    const CopyRound r{c.stochastic_rounding, c.seed, c.offset, base};
    const int64_t n = ps[k].numel();
    base += static_cast<uint64_t>(n);
    visit_param(ps[k], [&](auto tag) {
      using P = typename decltype(tag)::type;
      if constexpr (std::is_same_v<P, float> || std::is_same_v<P, double>)
        adagrad_one<P, P>(ps[k].data<P>(), gs[k].data<P>(), sums[k], nullptr, r, n, c);
      else
        adagrad_one<float, P>(masters[k].data<float>(), gs[k].data<P>(), sums[k], ps[k].data<P>(), r, n, c);
    });
  }
}

}  // namespace

FLOCK_REGISTER_KERNEL(adam_step, CPU, adam_cpu);
FLOCK_REGISTER_KERNEL(sgd_step, CPU, sgd_cpu);
FLOCK_REGISTER_KERNEL(rmsprop_step, CPU, rmsprop_cpu);
FLOCK_REGISTER_KERNEL(adagrad_step, CPU, adagrad_cpu);

}  // namespace flock::cpu
