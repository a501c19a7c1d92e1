// Order-preserving 64-bit keys for sort: comparing keys as unsigned integers orders the values as
// torch.sort does (NaN above +inf, all NaNs equal, -0 equal to +0), so the CPU's stable sort and
// the GPU's radix sort agree exactly. Descending order sorts the complemented keys.
#pragma once
#include <cstdint>
#include <cstring>

#ifdef __CUDACC__
#define FLOCK_SORT_HD __host__ __device__ __forceinline__
#else
#define FLOCK_SORT_HD inline
#endif

namespace flock {

FLOCK_SORT_HD uint64_t sort_key_float(double v) {
  if (v != v) return ~uint64_t(0);
  if (v == 0) v = 0;  // -0 -> +0
  uint64_t bits;
  memcpy(&bits, &v, sizeof bits);
  return (bits >> 63) ? ~bits : bits | (uint64_t(1) << 63);
}

FLOCK_SORT_HD uint64_t sort_key_int(int64_t v) { return static_cast<uint64_t>(v) ^ (uint64_t(1) << 63); }

FLOCK_SORT_HD uint64_t sort_key_dir(uint64_t k, bool descending) { return descending ? ~k : k; }

}  // namespace flock
