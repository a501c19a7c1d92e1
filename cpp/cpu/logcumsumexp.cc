// CPU logcumsumexp: out_i = log(Σ_{k<=i} exp(x_k)) along dim of a contiguous tensor, seen as
// [outer, n, inner]. Each step adds one term in log space (log-add-exp: the larger term plus
// log1p of the other's ratio), so nothing overflows where exp(x) would; accumulated in double.
#include <algorithm>
#include <cmath>
#include <limits>
#include "../generated/kernels_logcumsumexp.h"
#include "loops.h"

namespace flock::cpu {
namespace {

// log(exp(a) + exp(b)). Equal infinities give themselves (their difference is NaN); NaN spreads.
inline double log_add_exp(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<double>::quiet_NaN();
  const double lo = std::min(a, b), hi = std::max(a, b);
  return lo != hi || std::isfinite(lo) ? hi + std::log1p(std::exp(lo - hi)) : a;
}

template <class T>
void logcumsumexp_typed(const Tensor& x, Tensor& out, int64_t outer, int64_t n, int64_t inner) {
  const T* xp = x.data<T>();
  T* op = out.data<T>();
  // One job per (outer, block of inner columns): the block's running values walk n in memory order.
  constexpr int64_t kBlock = 64;
  const int64_t blocks = (inner + kBlock - 1) / kBlock;
  parallel_for(outer * blocks, std::max<int64_t>(1, 512 / std::max<int64_t>(1, n * std::min(inner, kBlock))),
               [&](int64_t b0, int64_t b1) {
                 double acc[kBlock];
                 for (int64_t job = b0; job < b1; ++job) {
                   const int64_t o = job / blocks, i0 = (job % blocks) * kBlock, w = std::min(kBlock, inner - i0);
                   std::fill(acc, acc + w, -std::numeric_limits<double>::infinity());
                   for (int64_t r = 0; r < n; ++r) {
                     const int64_t base = (o * n + r) * inner + i0;
                     for (int64_t i = 0; i < w; ++i) {
                       acc[i] = log_add_exp(acc[i], static_cast<double>(static_cast<acc_t<T>>(xp[base + i])));
                       op[base + i] = from_double<T>(acc[i]);
                     }
                   }
                 }
               });
}

void logcumsumexp_cpu(const Tensor& x, Tensor& out, int64_t dim) {
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= x.shape[d];
  for (int64_t d = dim + 1; d < x.dim(); ++d) inner *= x.shape[d];
  const int64_t n = x.dim() == 0 ? 1 : x.shape[dim];
  visit_float(x.dtype, "logcumsumexp", [&](auto tag) {
    using T = typename decltype(tag)::type;
    logcumsumexp_typed<T>(x, out, outer, n, inner);
  });
}

}  // namespace

FLOCK_REGISTER_KERNEL(logcumsumexp, CPU, logcumsumexp_cpu);

}  // namespace flock::cpu
