// CPU maskedSelect and nonzero: each true element of the mask knows its output slot from the
// running count (positions), so the rows are written in parallel and in row-major order.
#include <cstring>
#include "../kernels.h"
#include "loops.h"

namespace flock::cpu {
namespace {

// The output slot of element i, or -1 when the mask is false there. A slot past `count` means
// the count the front end was given does not match the mask: refused, never written.
inline int64_t slot_of(const bool* mask, const int64_t* pos, int64_t i, int64_t count) {
  if (!mask[i]) return -1;
  const int64_t p = pos[i] - 1;
  if (p < 0 || p >= count) fail(Code::Internal, "the mask has more true elements than the ", count, " counted");
  return p;
}

void masked_select_cpu(const Tensor& x, const Tensor& mask, const Tensor& positions, Tensor& out) {
  const int64_t n = x.numel(), count = out.numel();
  const size_t es = dtype_size(x.dtype);
  const char* xp = static_cast<const char*>(x.raw());
  char* op = static_cast<char*>(out.raw());
  const bool* mp = mask.data<bool>();
  const int64_t* pp = positions.data<int64_t>();
  parallel_for(n, kElementGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const int64_t p = slot_of(mp, pp, i, count);
      if (p >= 0) std::memcpy(op + p * es, xp + i * es, es);
    }
  });
}

void nonzero_cpu(const Tensor& mask, const Tensor& positions, Tensor& out) {
  const int64_t n = mask.numel(), count = out.shape[0], nd = mask.dim();
  const bool* mp = mask.data<bool>();
  const int64_t* pp = positions.data<int64_t>();
  int64_t* op = out.data<int64_t>();
  parallel_for(n, kElementGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const int64_t p = slot_of(mp, pp, i, count);
      if (p < 0) continue;
      int64_t rem = i;
      for (int64_t d = nd - 1; d >= 0; --d) {
        op[p * nd + d] = rem % mask.shape[d];
        rem /= mask.shape[d];
      }
    }
  });
}

}  // namespace

FLOCK_REGISTER_KERNEL(masked_select, CPU, masked_select_cpu);
FLOCK_REGISTER_KERNEL(nonzero, CPU, nonzero_cpu);

}  // namespace flock::cpu
