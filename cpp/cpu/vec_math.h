// f32 exp, erf and GELU written as branch-free straight-line code, so a loop that calls them
// vectorises (at the width of the function it is inlined into: see FLOCK_TARGET_* and
// FLOCK_ISA_PARALLEL_FOR in loops.h). std::exp and std::erf are library calls the compiler cannot
// vectorise. Used by the f32 (and bf16/f16) softmax rows, bias + GELU and fused attention; f64
// keeps libm.
//   exp_f: Cephes' expf (range reduction by ln 2, degree-6 polynomial), within 1 ulp of the
//          correctly rounded value over the normal range (checked against libm's double exp on
//          every 97th f32 bit pattern); subnormal results are computed, 0 below -104 (so
//          exp(-inf) is exactly 0), +inf above 88.7; NaN stays NaN.
//   erf_f, normal_cdf_f: |x| < 1 an odd polynomial, else from erfc (below), within a few ulp;
//          gelu_f and gelu_grad_f build on Φ so the negative tail keeps its relative precision
//          (the exponent −x²/2 is carried in two parts: exp_p_minus_sq_f); both are within 1e-6
//          relative of f64 (test/ops/gelu_vec.test.ts).
#pragma once
#include <cstdint>
#include <cstring>

namespace flock::cpu::fastmath {

#define FLOCK_MATH_INLINE inline __attribute__((always_inline))

FLOCK_MATH_INLINE float bits_to_float(int32_t i) {
  float f;
  std::memcpy(&f, &i, sizeof f);
  return f;
}

FLOCK_MATH_INLINE int32_t float_to_bits(float f) {
  int32_t i;
  std::memcpy(&i, &f, sizeof i);
  return i;
}

FLOCK_MATH_INLINE float exp_f(float x) {
  // Below -87.3 the result is subnormal; 2ⁿ in two factors (below) keeps it exact down to -104.
  const float hi = 88.7228391f, lo = -104.0f;
  float xc = x > hi ? hi : x;
  xc = xc < lo ? lo : xc;
  // n = round(x / ln 2) with the 1.5·2²³ trick: the sum's low mantissa bits hold n, so no
  // float-to-int conversion (which keeps the vectoriser from if-converting the clamps).
  const float magic = 12582912.0f;
  const float kf = xc * 1.44269504088896341f + magic;
  const float fn = kf - magic;
  const int32_t n = float_to_bits(kf) - 0x4B400000;
  float r = xc - fn * 0.693359375f;  // r = x − n·ln 2 in two parts (Cody–Waite)
  r = r - fn * -2.12194440e-4f;
  float y = 1.9875691500e-4f;
  y = y * r + 1.3981999507e-3f;
  y = y * r + 8.3334519073e-3f;
  y = y * r + 4.1665795894e-2f;
  y = y * r + 1.6666665459e-1f;
  y = y * r + 5.0000001201e-1f;
  y = y * r * r + r + 1.0f;
  // 2ⁿ as two factors, so n = 128 (x near the top of the range) and n = −126 stay representable.
  const int32_t n1 = n >> 1;
  const float scaled = y * bits_to_float((n1 + 127) << 23) * bits_to_float((n - n1 + 127) << 23);
  float out = x < lo ? 0.0f : scaled;
  out = x > hi ? __builtin_inff() : out;
  return x != x ? x : out;
}

// exp(p − k·v²) for k = 1 or 1/2, keeping its relative precision when k·v² is large (the tails of
// erfc and the normal density): v is split on its bits into a 12-bit head and the rest, so every
// partial product of v² is exact (fused into an FMA or not), and the roundings of the two
// subtractions (Two-Sum) and the smallest product go into a first-order correction.
FLOCK_MATH_INLINE float exp_p_minus_sq_f(float p, float v, float k) {
  const float vh = bits_to_float(float_to_bits(v) & ~0xfff);
  const float vl = v - vh;
  const float q1 = k * (vh * vh), q2 = k * (2.0f * vh * vl), q3 = k * (vl * vl);
  const float s1 = p - q1;
  const float b1 = s1 - p;
  const float e1 = (p - (s1 - b1)) + (-q1 - b1);
  const float s2 = s1 - q2;
  const float b2 = s2 - s1;
  const float e2 = (s1 - (s2 - b2)) + (-q2 - b2);
  return exp_f(s2) * (1.0f + ((e1 + e2) - q3));
}

// erfc(a) for a ≥ 0 as t·exp(−a² + P(t)), t = 1/(1 + a/2) (Numerical Recipes' erfcc: relative
// error below 1.2e-7 for every a ≥ 0), with a² = k·v² (v = a, k = 1; or v = a·√2, k = 1/2, exact
// for the normal CDF's tail). Callers clamp v (erfc is 0 in f32 well before a = 14).
FLOCK_MATH_INLINE float erfc_core_f(float a, float v, float k) {
  const float t = 1.0f / (1.0f + 0.5f * a);
  float p = 0.17087277f;
  p = p * t - 0.82215223f;
  p = p * t + 1.48851587f;
  p = p * t - 1.13520398f;
  p = p * t + 0.27886807f;
  p = p * t - 0.18628806f;
  p = p * t + 0.09678418f;
  p = p * t + 0.37409196f;
  p = p * t + 1.00002368f;
  p = p * t - 1.26551223f;
  return t * exp_p_minus_sq_f(p, v, k);
}

FLOCK_MATH_INLINE float erfc_pos_f(float a) {
  const float ac = a < 14.0f ? a : 14.0f;
  return erfc_core_f(ac, ac, 1.0f);
}

// erf(a)/a for |a| < 1 as a polynomial in a² (Chebyshev fit, relative error 5e-9).
FLOCK_MATH_INLINE float erf_small_f(float z) {
  float p = 8.0068743765e-05f;
  p = p * z - 8.0537511962e-04f;
  p = p * z + 5.1929578771e-03f;
  p = p * z - 2.6856069575e-02f;
  p = p * z + 1.1283634635e-01f;
  p = p * z - 3.7612629767e-01f;
  p = p * z + 1.1283791662e+00f;
  return p;
}

FLOCK_MATH_INLINE float erf_f(float x) {
  const float ax = x < 0 ? -x : x;
  const float small = x * erf_small_f(x * x);
  const float big = 1.0f - erfc_pos_f(ax);
  const float r = ax < 1.0f ? small : (x < 0 ? -big : big);
  return x != x ? x : r;
}

// The standard normal CDF Φ(x) = (1 + erf(x/√2))/2, with the tail taken from erfc directly so
// Φ of a large negative x keeps its relative precision.
FLOCK_MATH_INLINE float normal_cdf_f(float x) {
  const float a = x * 0.70710678118654752f;
  const float aa = a < 0 ? -a : a;
  const float small = 0.5f + 0.5f * a * erf_small_f(a * a);
  const float ax = x < 0 ? -x : x;
  const float xc = ax < 19.8f ? ax : 19.8f;  // a² = x²/2 exactly, from x itself
  const float tail = 0.5f * erfc_core_f(xc * 0.70710678118654752f, xc, 0.5f);
  const float r = aa < 1.0f ? small : (a < 0 ? tail : 1.0f - tail);
  return x != x ? x : r;
}

// GELU (exact, erf form) and its derivative, as PyTorch's gelu(approximate='none').
FLOCK_MATH_INLINE float gelu_f(float x) { return x * normal_cdf_f(x); }

FLOCK_MATH_INLINE float gelu_grad_f(float x) {
  const float ax = x < 0 ? -x : x;
  const float xc = ax < 19.8f ? ax : 19.8f;  // e^(−x²/2) is 0 in f32 from |x| ≈ 14.4
  return normal_cdf_f(x) + x * 0.39894228040143268f * exp_p_minus_sq_f(0.0f, xc, 0.5f);
}

}  // namespace flock::cpu::fastmath
