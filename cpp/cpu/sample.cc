// CPU multinomial draws from the Philox stream shared with CUDA (philox.h): with replacement a
// binary search of each row's running sum (summed in double, in order, as the GPU does); without
// replacement the keys log(u) / p whose row-wise top k is a draw (the exponential-race trick).
#include <cmath>
#include <vector>
#include "../kernels.h"
#include "../philox.h"
#include "loops.h"

namespace flock::cpu {
namespace {

// Uniform word w of a draw at (seed, offset): element w of the Philox stream, as random() lays it out.
inline float uniform_at(uint64_t seed, uint64_t offset, int64_t w) {
  return philox_uniform(philox(seed, offset + static_cast<uint64_t>(w / 4)).v[w % 4]);
}

void multinomial_cpu(const Tensor& probs, Tensor& out, int64_t num_samples, uint64_t seed, uint64_t offset) {
  const int64_t rows = probs.shape[0], c = probs.shape[1];
  visit_float(probs.dtype, "multinomial", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* pp = probs.data<T>();
    int64_t* op = out.data<int64_t>();
    parallel_for(rows, 1, [&](int64_t r0, int64_t r1) {
      std::vector<double> cdf(static_cast<size_t>(c));
      for (int64_t r = r0; r < r1; ++r) {
        double total = 0;
        for (int64_t i = 0; i < c; ++i) {
          total += to_double(pp[r * c + i]);
          cdf[i] = total;
        }
        for (int64_t s = 0; s < num_samples; ++s) {
          const double u = static_cast<double>(uniform_at(seed, offset, r * num_samples + s)) * total;
          // The first category whose running sum exceeds u (zero-probability ones never do).
          int64_t lo = 0, hi = c - 1;
          while (lo < hi) {
            const int64_t mid = (lo + hi) / 2;
            if (cdf[mid] > u)
              hi = mid;
            else
              lo = mid + 1;
          }
          op[r * num_samples + s] = lo;
        }
      }
    });
  });
}

void multinomial_keys_cpu(const Tensor& probs, Tensor& keys, uint64_t seed, uint64_t offset) {
  visit_float(probs.dtype, "multinomial", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* pp = probs.data<T>();
    double* kp = keys.data<double>();
    parallel_for(probs.numel(), kElementGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        // u in (0, 1]: log(u) <= 0 is finite, so a positive p always beats p = 0 (-inf).
        const double u = 1.0 - static_cast<double>(uniform_at(seed, offset, i));
        const double p = to_double(pp[i]);
        kp[i] = p > 0 ? std::log(u) / p : -INFINITY;
      }
    });
  });
}

// Row by row, in order, so the error names the first bad row as torch's check would find it.
void multinomial_check_cpu(const Tensor& probs, int64_t num_samples, bool replacement) {
  const int64_t rows = probs.shape[0], c = probs.shape[1];
  visit_float(probs.dtype, "multinomial", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* pp = probs.data<T>();
    for (int64_t r = 0; r < rows; ++r) {
      double total = 0;
      int64_t positive = 0;
      for (int64_t i = 0; i < c; ++i) {
        const double p = to_double(pp[r * c + i]);
        if (!std::isfinite(p)) fail(Code::Range, "multinomial: probabilities must be finite (got ", p, " in row ", r, ")");
        if (p < 0) fail(Code::Range, "multinomial: probabilities must be non-negative, got ", p, " in row ", r);
        total += p;
        positive += p > 0;
      }
      if (!(total > 0))
        fail(Code::Range, "multinomial: every row of probabilities must have a positive sum (row ", r, " sums to 0)");
      if (!replacement && positive < num_samples)
        fail(Code::Range, "multinomial: cannot draw ", num_samples, " samples without replacement: row ", r, " has only ",
             positive, " non-zero probabilities");
    }
  });
}

}  // namespace

FLOCK_REGISTER_KERNEL(multinomial_check, CPU, multinomial_check_cpu);
FLOCK_REGISTER_KERNEL(multinomial, CPU, multinomial_cpu);
FLOCK_REGISTER_KERNEL(multinomial_keys, CPU, multinomial_keys_cpu);

}  // namespace flock::cpu
