// CPU gradient unscaling for GradScaler: every gradient of the list multiplied by 1/scale in place,
// and one flag raised if any value is inf or NaN, in a single queued call.
#include <atomic>
#include <cmath>
#include "../nn_kernels.h"
#include "loops.h"

namespace flock::cpu {
namespace {

void amp_unscale_cpu(std::vector<Tensor>& ts, Tensor& found_inf, double inv_scale) {
  std::atomic<bool> bad{false};
  for (Tensor& t : ts) {
    visit_float(t.dtype, "ampUnscale", [&](auto tag) {
      using T = typename decltype(tag)::type;
      using C = acc_t<T>;
      T* x = t.data<T>();
      const C s = static_cast<C>(inv_scale);
      parallel_for(t.numel(), kElementGrain, [&](int64_t b, int64_t e) {
        bool local = false;
        for (int64_t i = b; i < e; ++i) {
          const C v = static_cast<C>(x[i]);
          // v − v is 0 for finite v and NaN for inf/NaN: one branch-free test that vectorises.
          local |= (v - v) != (v - v);
          x[i] = static_cast<T>(v * s);
        }
        if (local) bad.store(true, std::memory_order_relaxed);
      });
    });
  }
  if (bad.load()) *found_inf.data<float>() = 1.0f;
}

}  // namespace

FLOCK_REGISTER_KERNEL(amp_unscale, CPU, amp_unscale_cpu);

}  // namespace flock::cpu
