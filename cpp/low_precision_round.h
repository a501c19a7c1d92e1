// Rounding an f32 master weight to its bf16/f16 working copy: to nearest even, or stochastically
// (round up with probability equal to the distance from the lower neighbour), which keeps the
// copy unbiased when updates are smaller than half a unit in the last place (llm.c's choice for
// bf16 training). Shared by the CPU and CUDA optimizer steps, so both round alike.
#pragma once
#include <cstdint>
#include <cstring>
#include "dtype.h"

#ifdef __CUDACC__
#include <cuda_fp16.h>
#define FLOCK_ROUND_HD __host__ __device__ __forceinline__
#else
#define FLOCK_ROUND_HD inline
#endif

namespace flock {

FLOCK_ROUND_HD uint32_t float_bits(float x) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(x);
#else
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
#endif
}

// bf16 keeps the top 16 bits of an f32: adding 16 random low bits before truncating rounds up
// with exactly the right probability (a carry into the exponent is the correct next value).
// NaN and infinities keep their nearest rounding.
FLOCK_ROUND_HD uint16_t bf16_bits_stochastic(float x, uint32_t r, uint16_t nearest) {
  uint32_t u = float_bits(x);
  if ((u & 0x7fffffffu) >= 0x7f800000u) return nearest;
  u += r & 0xffffu;
  return static_cast<uint16_t>(u >> 16);
}

FLOCK_ROUND_HD float f16_bits_to_float(uint16_t bits) {
#ifdef __CUDA_ARCH__
  return __half2float(__ushort_as_half(bits));
#else
  f16 h;
  h.bits = bits;
  return static_cast<float>(h);
#endif
}

// f16: the two neighbours of |x| are the magnitudes `lo` and `lo + 1` (as bit patterns). Chooses
// the upper one with probability (|x| − lo) / (hi − lo).
FLOCK_ROUND_HD uint16_t f16_bits_stochastic(float x, uint32_t r, uint16_t nearest) {
  const uint32_t u = float_bits(x);
  if ((u & 0x7fffffffu) >= 0x7f800000u) return nearest;
  const float a = x < 0 ? -x : x;
  const uint16_t sign = static_cast<uint16_t>(nearest & 0x8000u), mag = static_cast<uint16_t>(nearest & 0x7fffu);
  const float fm = f16_bits_to_float(mag);
  if (fm == a) return nearest;
  const uint16_t lo = fm < a ? mag : static_cast<uint16_t>(mag - 1), hi = static_cast<uint16_t>(lo + 1);
  const float flo = f16_bits_to_float(lo), fhi = f16_bits_to_float(hi);
  const float p_up = (a - flo) / (fhi - flo);
  const float draw = static_cast<float>(r >> 8) * (1.0f / 16777216.0f);
  return static_cast<uint16_t>(sign | (draw < p_up ? hi : lo));
}

}  // namespace flock
