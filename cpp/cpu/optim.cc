// CPU fused optimizer steps: one queued call updates every parameter of a group in place, in the
// formulas of torch.optim (Adam/AdamW with bias correction and amsgrad, SGD with momentum/dampening/
// Nesterov; both with maximize).
#include <cmath>
#include "../nn_kernels.h"
#include "loops.h"

namespace flock::cpu {
namespace {

// The per-element update with the configuration's branches resolved at compile time and the
// arrays declared unaliased, so the loop vectorises (sqrt and division included). `sign` is -1 for
// maximize: multiplying by ±1 is exact, so it needs no variant of its own.
template <class T, bool Decoupled, bool L2, bool Amsgrad>
void adam_range(T* __restrict pp, const T* __restrict gp, T* __restrict mp, T* __restrict vp, T* __restrict mvp, int64_t b, int64_t e,
                T step_size, T b1, T b2, T eps, T wd, T rbc2, T decay, T sign) {
  for (int64_t i = b; i < e; ++i) {
    T gi = sign * gp[i];
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

template <class T, bool Amsgrad>
void adam_dispatch(T* pp, const T* gp, T* mp, T* vp, T* mvp, int64_t b, int64_t e, bool decoupled, bool l2,
                   T step_size, T b1, T b2, T eps, T wd, T rbc2, T decay, T sign) {
  if (decoupled) adam_range<T, true, false, Amsgrad>(pp, gp, mp, vp, mvp, b, e, step_size, b1, b2, eps, wd, rbc2, decay, sign);
  else if (l2) adam_range<T, false, true, Amsgrad>(pp, gp, mp, vp, mvp, b, e, step_size, b1, b2, eps, wd, rbc2, decay, sign);
  else adam_range<T, false, false, Amsgrad>(pp, gp, mp, vp, mvp, b, e, step_size, b1, b2, eps, wd, rbc2, decay, sign);
}

template <class T>
void adam_one(Tensor& p, const Tensor& g, Tensor& m, Tensor& v, Tensor* max_v, const AdamConfig& c) {
  T* pp = p.data<T>();
  const T* gp = g.data<T>();
  T* mp = m.data<T>();
  T* vp = v.data<T>();
  T* mvp = max_v ? max_v->data<T>() : nullptr;
  const double bc1 = 1 - std::pow(c.beta1, double(c.step)), bc2 = 1 - std::pow(c.beta2, double(c.step));
  const T step_size = T(c.lr / bc1), b1 = T(c.beta1), b2 = T(c.beta2), eps = T(c.eps), wd = T(c.weight_decay);
  const T rbc2 = T(1 / std::sqrt(bc2)), decay = T(1 - c.lr * c.weight_decay), sign = T(c.maximize ? -1 : 1);
  const bool l2 = !c.decoupled && c.weight_decay != 0;
  parallel_for(p.numel(), kElementGrain, [&](int64_t b, int64_t e) {
    if (mvp) adam_dispatch<T, true>(pp, gp, mp, vp, mvp, b, e, c.decoupled, l2, step_size, b1, b2, eps, wd, rbc2, decay, sign);
    else adam_dispatch<T, false>(pp, gp, mp, vp, mvp, b, e, c.decoupled, l2, step_size, b1, b2, eps, wd, rbc2, decay, sign);
  });
}

template <class T>
void sgd_one(Tensor& p, const Tensor& g, Tensor* buf, const SgdConfig& c) {
  T* __restrict pp = p.data<T>();
  const T* __restrict gp = g.data<T>();
  T* __restrict bp = buf ? buf->data<T>() : nullptr;
  const T lr = T(c.lr), mom = T(c.momentum), damp = T(1 - c.dampening), wd = T(c.weight_decay), sign = T(c.maximize ? -1 : 1);
  parallel_for(p.numel(), kElementGrain, [&](int64_t b, int64_t e) {
    if (!bp) {
      for (int64_t i = b; i < e; ++i) pp[i] -= lr * (sign * gp[i] + wd * pp[i]);
      return;
    }
    for (int64_t i = b; i < e; ++i) {
      T d = sign * gp[i] + wd * pp[i];
      const T bi = c.first_step ? d : mom * bp[i] + damp * d;
      bp[i] = bi;
      d = c.nesterov ? d + mom * bi : bi;
      pp[i] -= lr * d;
    }
  });
}

void adam_cpu(std::vector<Tensor>& ps, const std::vector<Tensor>& gs, std::vector<Tensor>& ms, std::vector<Tensor>& vs, std::vector<Tensor>& mvs,
              const AdamConfig& c) {
  for (size_t k = 0; k < ps.size(); ++k) {
    Tensor* mv = c.amsgrad ? &mvs[k] : nullptr;
    if (ps[k].dtype == DType::f64) adam_one<double>(ps[k], gs[k], ms[k], vs[k], mv, c);
    else adam_one<float>(ps[k], gs[k], ms[k], vs[k], mv, c);
  }
}

void sgd_cpu(std::vector<Tensor>& ps, const std::vector<Tensor>& gs, std::vector<Tensor>& bufs, const SgdConfig& c) {
  for (size_t k = 0; k < ps.size(); ++k) {
    Tensor* buf = bufs.empty() ? nullptr : &bufs[k];
    if (ps[k].dtype == DType::f64) sgd_one<double>(ps[k], gs[k], buf, c);
    else sgd_one<float>(ps[k], gs[k], buf, c);
  }
}

}  // namespace

FLOCK_REGISTER_KERNEL(adam_step, CPU, adam_cpu);
FLOCK_REGISTER_KERNEL(sgd_step, CPU, sgd_cpu);

}  // namespace flock::cpu
