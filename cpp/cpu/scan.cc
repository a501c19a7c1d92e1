// CPU cumulative sums and products (cumsum, cumprod) along the middle dim of [outer, n, inner],
// and cumprod's gradient. Floats accumulate in double, integers in int64 (as torch on the CPU).
#include <vector>
#include "../kernels.h"
#include "loops.h"

namespace flock::cpu {
namespace {

template <class T>
using scan_acc_t = std::conditional_t<std::is_floating_point_v<acc_t<T>>, double, int64_t>;

template <class T>
void scan_typed(const Tensor& x, Tensor& out, int64_t outer, int64_t n, int64_t inner, bool prod, bool reverse) {
  using A = scan_acc_t<T>;
  const T* xp = x.data<T>();
  T* op = out.data<T>();
  // One job per (outer, block of inner): the block's running values walk n in memory order.
  constexpr int64_t kBlock = 64;
  const int64_t blocks = (inner + kBlock - 1) / kBlock;
  parallel_for(outer * blocks, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, n * std::min(inner, kBlock))),
               [&](int64_t b0, int64_t b1) {
                 A acc[kBlock];
                 for (int64_t job = b0; job < b1; ++job) {
                   const int64_t o = job / blocks, i0 = (job % blocks) * kBlock, w = std::min(kBlock, inner - i0);
                   for (int64_t i = 0; i < w; ++i) acc[i] = prod ? A(1) : A(0);
                   for (int64_t s = 0; s < n; ++s) {
                     const int64_t r = reverse ? n - 1 - s : s;
                     const int64_t base = (o * n + r) * inner + i0;
                     for (int64_t i = 0; i < w; ++i) {
                       const A v = static_cast<A>(static_cast<acc_t<T>>(xp[base + i]));
                       acc[i] = prod ? acc[i] * v : acc[i] + v;
                       op[base + i] = from_double<T>(static_cast<double>(acc[i]));
                     }
                   }
                 }
               });
}

void scan_cpu(const Tensor& x, Tensor& out, int64_t outer, int64_t n, int64_t inner, bool prod, bool reverse) {
  if (outer * n * inner == 0) return;
  visit_numeric(x.dtype, prod ? "cumprod" : "cumsum", [&](auto tag) {
    using T = typename decltype(tag)::type;
    scan_typed<T>(x, out, outer, n, inner, prod, reverse);
  });
}

// d cumprod(x)_j / d x_i = prod_{k <= j, k != i} x_k for j >= i. Before the first zero z the
// products divide cleanly: gx_i = Σ_{j>=i} gy_j·y_j / x_i. At z the prefix before it times the
// running product after it; past z every product holds x_z = 0.
template <class T>
void cumprod_backward_line(const T* x, const T* gy, T* gx, int64_t n, int64_t inner) {
  auto at = [&](const T* p, int64_t r) { return static_cast<double>(static_cast<acc_t<T>>(p[r * inner])); };
  int64_t z = n;
  for (int64_t r = 0; r < n; ++r)
    if (at(x, r) == 0) {
      z = r;
      break;
    }
  std::vector<double> prefix(static_cast<size_t>(z + 1));
  double p = 1;
  for (int64_t r = 0; r < z; ++r) {
    p *= at(x, r);
    prefix[r] = p;
  }
  double tail = 0;  // Σ_{j >= r} gy_j·y_j over j < z (y_j = 0 from z on)
  for (int64_t r = n - 1; r >= 0; --r) {
    double g = 0;
    if (r < z) {
      tail += at(gy, r) * prefix[r];
      g = tail / at(x, r);
    } else if (r == z) {
      double q = z > 0 ? prefix[z - 1] : 1.0;
      g = at(gy, z) * q;
      for (int64_t j = z + 1; j < n; ++j) {
        q *= at(x, j);
        g += at(gy, j) * q;
      }
    }
    gx[r * inner] = from_double<T>(g);
  }
}

void cumprod_backward_cpu(const Tensor& x, const Tensor& gy, Tensor& gx, int64_t outer, int64_t n, int64_t inner) {
  if (outer * n * inner == 0) return;
  visit_float(x.dtype, "cumprod", [&](auto tag) {
    using T = typename decltype(tag)::type;
    parallel_for(outer * inner, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, n)), [&](int64_t l0, int64_t l1) {
      for (int64_t l = l0; l < l1; ++l) {
        const int64_t off = (l / inner) * n * inner + l % inner;
        cumprod_backward_line<T>(x.data<T>() + off, gy.data<T>() + off, gx.data<T>() + off, n, inner);
      }
    });
  });
}

}  // namespace

FLOCK_REGISTER_KERNEL(scan, CPU, scan_cpu);
FLOCK_REGISTER_KERNEL(cumprod_backward, CPU, cumprod_backward_cpu);

}  // namespace flock::cpu
