// Math for f32 loops the compiler vectorises (no libm calls, no branches): use inside
// FLOCK_ISA_PARALLEL_FOR bodies, where each instruction set's copy then runs at its own width.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

namespace flock::cpu {

// e^x within 1 ulp of the correctly rounded value over the normal range (checked against libm's
// double exp on every 97th f32 bit pattern); subnormal results are computed, not flushed; ±inf and
// NaN as expf. Range reduction x = k·ln2 + r with ln2 split in two (Cody–Waite), a degree-7
// polynomial for e^r (Cephes' coefficients), and 2^k applied as two exact power-of-two factors so
// k = 128 and subnormal results need no special case.
inline float exp_f32(float x) {
  const float lo = x < -104.0f ? -104.0f : x, xc = lo > 88.72283935546875f ? 88.72283935546875f : lo;
  const float k = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;  // round to nearest (1.5·2^23)
  float r = xc - k * 0.693359375f;
  r = r - k * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float y = p * r * r + r + 1.0f;
  const int32_t ki = static_cast<int32_t>(k), h = ki >> 1, l = ki - h;
  const int32_t hb = (h + 127) << 23, lb = (l + 127) << 23;
  float ph, pl;
  std::memcpy(&ph, &hb, sizeof ph);
  std::memcpy(&pl, &lb, sizeof pl);
  const float e = y * ph * pl;
  return x != x ? x : (x > 88.72283935546875f ? INFINITY : e);
}

}  // namespace flock::cpu
