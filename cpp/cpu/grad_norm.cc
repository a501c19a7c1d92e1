// CPU global gradient norm and clipping: every tensor of the list in one queued call, each split
// over the pool; partial sums are taken in double so a norm over millions of f32 values keeps
// its digits.
#include <algorithm>
#include <cmath>
#include <mutex>
#include <type_traits>
#include "../nn_kernels.h"
#include "loops.h"

namespace flock::cpu {
namespace {

template <class T>
double norm_part(const T* x, int64_t b, int64_t e, double p) {
  double s = 0;
  if (std::isinf(p)) {
    for (int64_t i = b; i < e; ++i) {
      const double a = std::fabs(static_cast<double>(x[i]));
      s = (a > s || std::isnan(a)) ? a : s;  // NaN wins, as in a norm that propagates it
      if (std::isnan(s)) break;
    }
  } else if (p == 2) {
    for (int64_t i = b; i < e; ++i) s += static_cast<double>(x[i]) * static_cast<double>(x[i]);
  } else if (p == 1) {
    for (int64_t i = b; i < e; ++i) s += std::fabs(static_cast<double>(x[i]));
  } else {
    for (int64_t i = b; i < e; ++i) s += std::pow(std::fabs(static_cast<double>(x[i])), p);
  }
  return s;
}

void grad_norm_cpu(const std::vector<Tensor>& ts, Tensor& acc, Tensor& out, double p) {
  const bool max_norm = std::isinf(p);
  double total = 0;
  std::mutex m;
  for (const Tensor& t : ts) {
    visit_float(t.dtype, "gradNorm", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* x = t.data<T>();
      parallel_for(t.numel(), kElementGrain, [&](int64_t b, int64_t e) {
        const double s = norm_part(x, b, e, p);
        std::lock_guard<std::mutex> lk(m);
        total = max_norm ? ((s > total || std::isnan(s)) ? s : total) : total + s;
      });
    });
  }
  *acc.data<double>() = total;
  const double r = max_norm || p == 1 ? total : p == 2 ? std::sqrt(total) : std::pow(total, 1 / p);
  visit_float(out.dtype, "gradNorm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    *out.data<T>() = static_cast<T>(r);
  });
}

void clip_by_norm_cpu(std::vector<Tensor>& ts, const Tensor& total, double max_norm) {
  double norm = 0;
  visit_float(total.dtype, "clipGradNorm",
              [&](auto tag) { norm = static_cast<double>(*total.data<typename decltype(tag)::type>()); });
  // As PyTorch's clamp(max=1): a NaN norm gives a NaN coefficient and NaN gradients, not silence.
  const double raw = max_norm / (norm + 1e-6), coef = raw > 1.0 ? 1.0 : raw;
  if (coef == 1.0) return;
  for (Tensor& t : ts) {
    visit_float(t.dtype, "clipGradNorm", [&](auto tag) {
      using T = typename decltype(tag)::type;
      using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
      T* x = t.data<T>();
      const C c = static_cast<C>(coef);
      parallel_for(t.numel(), kElementGrain, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) x[i] = static_cast<T>(static_cast<C>(x[i]) * c);
      });
    });
  }
}

}  // namespace

FLOCK_REGISTER_KERNEL(grad_norm, CPU, grad_norm_cpu);
FLOCK_REGISTER_KERNEL(clip_by_norm, CPU, clip_by_norm_cpu);

}  // namespace flock::cpu
