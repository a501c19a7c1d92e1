// CPU tril/triu: each row of each matrix keeps a prefix (tril) or suffix (triu) of its columns and
// zeroes the rest. Zero has all bits clear in every dtype, so the kernel moves elements by width.
#include <algorithm>
#include <cstring>
#include "../generated/kernels_triangular.h"
#include "loops.h"

namespace flock::cpu {
namespace {

void triangular_cpu(const Tensor& x, Tensor& out, int64_t diagonal, bool upper) {
  const int64_t nd = x.dim();
  const int64_t rows = x.shape[nd - 2], cols = x.shape[nd - 1];
  if (rows == 0 || cols == 0) return;
  const int64_t total_rows = x.numel() / cols;
  const size_t es = dtype_size(x.dtype);
  const char* src = static_cast<const char*>(x.raw());
  char* dst = static_cast<char*>(out.raw());
  parallel_for(total_rows, std::max<int64_t>(1, kElementGrain / cols), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t i = r % rows;
      // Columns kept: [0, i + diagonal] for tril, [i + diagonal, cols) for triu.
      const int64_t edge = std::clamp<int64_t>(upper ? i + diagonal : i + diagonal + 1, 0, cols);
      const int64_t keep_lo = upper ? edge : 0, keep_hi = upper ? cols : edge;
      const size_t row = static_cast<size_t>(r * cols) * es;
      std::memset(dst + row, 0, static_cast<size_t>(cols) * es);
      if (keep_hi > keep_lo)
        std::memcpy(dst + row + static_cast<size_t>(keep_lo) * es, src + row + static_cast<size_t>(keep_lo) * es,
                    static_cast<size_t>(keep_hi - keep_lo) * es);
    }
  });
}

}  // namespace

FLOCK_REGISTER_KERNEL(triangular, CPU, triangular_cpu);

}  // namespace flock::cpu
