// The simulator's <cuda_fp16.h>: __half as 16 bits with the toolkit's conversions (float to half
// rounds to nearest even, overflows to infinity, keeps subnormals; NaN becomes the canonical
// 0x7fff) and float-based arithmetic.
#pragma once
#include <cstdint>
#include <cstring>

struct __half {
  unsigned short __x;
  __half() = default;
  inline __half(float f);
  inline operator float() const;
};
typedef __half half;

inline __half __ushort_as_half(unsigned short v) {
  __half r;
  r.__x = v;
  return r;
}
inline unsigned short __half_as_ushort(__half v) { return v.__x; }

inline float __half2float(__half v) {
  const uint32_t h = v.__x, sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  uint32_t u;
  if (exp == 0x1f) {
    u = sign | 0x7f800000u | (man << 13);
  } else if (exp) {
    u = sign | ((exp + 112) << 23) | (man << 13);
  } else if (!man) {
    u = sign;
  } else {
    const float f = static_cast<float>(man) * 5.9604644775390625e-08f;  // man · 2^-24, exact
    return sign ? -f : f;
  }
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline __half __float2half_rn(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return __ushort_as_half(0x7fff);
  if (ax >= 0x477ff000u) return __ushort_as_half(static_cast<unsigned short>(sign | 0x7c00u));  // rounds past 65504
  if (ax < 0x38800000u) {
    // Below the smallest normal half (2^-14): a subnormal, m · 2^-24 with m rounded to nearest
    // even. The f32 significand (with its implicit bit) shifted right by 126 - e lands there.
    const int e = static_cast<int>(ax >> 23);
    if (e < 102) return __ushort_as_half(static_cast<unsigned short>(sign));  // under half of 2^-24
    const uint32_t sig = (ax & 0x7fffffu) | 0x800000u;
    const int shift = 126 - e;
    uint32_t m = sig >> shift;
    const uint32_t rest = sig & ((1u << shift) - 1), half_ulp = 1u << (shift - 1);
    if (rest > half_ulp || (rest == half_ulp && (m & 1u))) ++m;
    return __ushort_as_half(static_cast<unsigned short>(sign | m));
  }
  // Normal: rebias the exponent (127 → 15) and round the 13 dropped bits to nearest even; a
  // carry out of the mantissa bumps the exponent, which is the correctly rounded result.
  uint32_t u = ax - (112u << 23);
  u += 0xfffu + ((u >> 13) & 1u);
  return __ushort_as_half(static_cast<unsigned short>(sign | (u >> 13)));
}
inline __half __float2half(float f) { return __float2half_rn(f); }
inline __half __double2half(double d) { return __float2half_rn(static_cast<float>(d)); }

inline __half::__half(float f) : __x(__float2half_rn(f).__x) {}
inline __half::operator float() const { return __half2float(*this); }

inline __half __hadd(__half a, __half b) { return __float2half_rn(float(a) + float(b)); }
inline __half __hsub(__half a, __half b) { return __float2half_rn(float(a) - float(b)); }
inline __half __hmul(__half a, __half b) { return __float2half_rn(float(a) * float(b)); }
inline __half __hdiv(__half a, __half b) { return __float2half_rn(float(a) / float(b)); }
inline __half operator+(__half a, __half b) { return __hadd(a, b); }
inline __half operator-(__half a, __half b) { return __hsub(a, b); }
inline __half operator*(__half a, __half b) { return __hmul(a, b); }
inline __half operator/(__half a, __half b) { return __hdiv(a, b); }
inline __half operator-(__half a) { return __ushort_as_half(static_cast<unsigned short>(a.__x ^ 0x8000u)); }
inline __half& operator+=(__half& a, __half b) { return a = a + b; }
inline __half& operator-=(__half& a, __half b) { return a = a - b; }
inline __half& operator*=(__half& a, __half b) { return a = a * b; }
inline __half& operator/=(__half& a, __half b) { return a = a / b; }
inline bool operator==(__half a, __half b) { return float(a) == float(b); }
inline bool operator!=(__half a, __half b) { return float(a) != float(b); }
inline bool operator<(__half a, __half b) { return float(a) < float(b); }
inline bool operator>(__half a, __half b) { return float(a) > float(b); }
inline bool operator<=(__half a, __half b) { return float(a) <= float(b); }
inline bool operator>=(__half a, __half b) { return float(a) >= float(b); }
