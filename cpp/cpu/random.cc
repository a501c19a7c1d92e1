// CPU random tensors from the shared Philox stream: uniform, normal, randint, bernoulli.
#include "../kernels.h"
#include "../philox.h"
#include "loops.h"
#include "../generated/random_codes.h"

namespace flock::cpu {
namespace {

void random_cpu(RandomKind kind, Tensor& out, uint64_t seed, uint64_t offset, double a, double b) {
  visit_dtype(out.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* o = out.data<T>();
    const int64_t n = out.numel();
    const int64_t groups = (n + 3) / 4;
    const uint64_t span = static_cast<uint64_t>(b - a);
    parallel_for(groups, 2048, [&](int64_t g0, int64_t g1) {
      for (int64_t g = g0; g < g1; ++g) {
        Philox4 r = philox(seed, offset + static_cast<uint64_t>(g));
        float v[4] = {};
        philox_values(static_cast<int>(kind), r, a, b, v);
        for (int j = 0; j < 4; ++j) {
          const int64_t i = g * 4 + j;
          if (i >= n) break;
          if (kind == RandomKind::randint)
            o[i] = from_double<T>(a + static_cast<double>(r.v[j] % span));
          else
            o[i] = from_double<T>(v[j]);
        }
      }
    });
  });
}

}  // namespace

FLOCK_REGISTER_KERNEL(random, CPU, random_cpu);

}  // namespace flock::cpu
