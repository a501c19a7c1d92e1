// CPU fused optimizer steps: one queued call updates every parameter of a group in place, in the
// formulas of torch.optim (Adam/AdamW with bias correction, SGD with momentum/dampening/Nesterov).
#include <cmath>
#include "../nn_kernels.h"
#include "loops.h"

namespace flock::cpu {
namespace {

// The per-element update with the configuration's branches resolved at compile time and the four
// arrays declared unaliased, so the loop vectorises (sqrt and division included).
template <class T, bool Decoupled, bool L2>
void adam_range(T* __restrict pp, const T* __restrict gp, T* __restrict mp, T* __restrict vp, int64_t b, int64_t e,
                T step_size, T b1, T b2, T eps, T wd, T rbc2, T decay) {
  for (int64_t i = b; i < e; ++i) {
    T gi = gp[i];
    if constexpr (Decoupled) pp[i] *= decay;
    if constexpr (L2) gi += wd * pp[i];
    const T mi = b1 * mp[i] + (1 - b1) * gi, vi = b2 * vp[i] + (1 - b2) * gi * gi;
    mp[i] = mi;
    vp[i] = vi;
    pp[i] -= step_size * mi / (std::sqrt(vi) * rbc2 + eps);
  }
}

template <class T>
void adam_one(Tensor& p, const Tensor& g, Tensor& m, Tensor& v, const AdamConfig& c) {
  T* pp = p.data<T>();
  const T* gp = g.data<T>();
  T* mp = m.data<T>();
  T* vp = v.data<T>();
  const double bc1 = 1 - std::pow(c.beta1, double(c.step)), bc2 = 1 - std::pow(c.beta2, double(c.step));
  const T step_size = T(c.lr / bc1), b1 = T(c.beta1), b2 = T(c.beta2), eps = T(c.eps), wd = T(c.weight_decay);
  const T rbc2 = T(1 / std::sqrt(bc2)), decay = T(1 - c.lr * c.weight_decay);
  const bool l2 = !c.decoupled && c.weight_decay != 0;
  parallel_for(p.numel(), kElementGrain, [&](int64_t b, int64_t e) {
    if (c.decoupled) adam_range<T, true, false>(pp, gp, mp, vp, b, e, step_size, b1, b2, eps, wd, rbc2, decay);
    else if (l2) adam_range<T, false, true>(pp, gp, mp, vp, b, e, step_size, b1, b2, eps, wd, rbc2, decay);
    else adam_range<T, false, false>(pp, gp, mp, vp, b, e, step_size, b1, b2, eps, wd, rbc2, decay);
  });
}

template <class T>
void sgd_one(Tensor& p, const Tensor& g, Tensor* buf, const SgdConfig& c) {
  T* __restrict pp = p.data<T>();
  const T* __restrict gp = g.data<T>();
  T* __restrict bp = buf ? buf->data<T>() : nullptr;
  const T lr = T(c.lr), mom = T(c.momentum), damp = T(1 - c.dampening), wd = T(c.weight_decay);
  parallel_for(p.numel(), kElementGrain, [&](int64_t b, int64_t e) {
    if (!bp) {
      for (int64_t i = b; i < e; ++i) pp[i] -= lr * (gp[i] + wd * pp[i]);
      return;
    }
    for (int64_t i = b; i < e; ++i) {
      T d = gp[i] + wd * pp[i];
      const T bi = c.first_step ? d : mom * bp[i] + damp * d;
      bp[i] = bi;
      d = c.nesterov ? d + mom * bi : bi;
      pp[i] -= lr * d;
    }
  });
}

void adam_cpu(std::vector<Tensor>& ps, const std::vector<Tensor>& gs, std::vector<Tensor>& ms, std::vector<Tensor>& vs, const AdamConfig& c) {
  for (size_t k = 0; k < ps.size(); ++k) {
    if (ps[k].dtype == DType::f64) adam_one<double>(ps[k], gs[k], ms[k], vs[k], c);
    else adam_one<float>(ps[k], gs[k], ms[k], vs[k], c);
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
