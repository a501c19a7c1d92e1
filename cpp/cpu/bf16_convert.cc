// f32 -> bf16 with AVX512_BF16 (bf16_vec.h), 16 lanes at a time; the tail, and any block holding
// an f32 subnormal (which the instruction flushes to zero), take the bitwise rounding.
#include <immintrin.h>
#include "bf16_vec.h"

namespace flock::cpu {

void bf16_narrow_cvtne(const float* src, bf16* dst, int64_t n) { bf16_narrow_add_cvtne(src, 0.0f, dst, n); }

// With add = 0 nothing is added, so a -0 stays -0.
__attribute__((target("avx512f,avx512bw,avx512bf16"))) void bf16_narrow_add_cvtne(const float* src, float add, bf16* dst,
                                                                                  int64_t n) {
  uint16_t* d = reinterpret_cast<uint16_t*>(dst);
  const bool plus = add != 0.0f;
  const __m512 addend = _mm512_set1_ps(add);
  const __m512i exp_mask = _mm512_set1_epi32(0x7f800000);
  const __m512i abs_mask = _mm512_set1_epi32(0x7fffffff);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 v = plus ? _mm512_add_ps(_mm512_loadu_ps(src + i), addend) : _mm512_loadu_ps(src + i);
    const __m512i u = _mm512_castps_si512(v);
    // Subnormal: exponent bits zero, magnitude nonzero.
    const __mmask16 sub = _mm512_testn_epi32_mask(u, exp_mask) & _mm512_test_epi32_mask(u, abs_mask);
    if (sub) {
      for (int64_t j = i; j < i + 16; ++j) d[j] = bf16_round_bits(plus ? src[j] + add : src[j]);
      continue;
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i), (__m256i)_mm512_cvtneps_pbh(v));
  }
  for (; i < n; ++i) d[i] = bf16_round_bits(plus ? src[i] + add : src[i]);
}

// Integer rounding of the f32 bits to their upper 16 (nearest even; a NaN quieted), low bits
// cleared: exact for subnormals too, so no fallback is needed.
__attribute__((target("avx512f"))) void bf16_round_f32(const float* src, float* dst, int64_t n) {
  const __m512i one = _mm512_set1_epi32(1), half = _mm512_set1_epi32(0x7fff), abs_mask = _mm512_set1_epi32(0x7fffffff);
  const __m512i inf = _mm512_set1_epi32(0x7f800000), quiet = _mm512_set1_epi32(0x00400000),
                high = _mm512_set1_epi32(int(0xffff0000u));
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 live = n - i >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - i)) - 1);
    const __m512i u = _mm512_maskz_loadu_epi32(live, src + i);
    const __m512i lsb = _mm512_and_si512(_mm512_maskz_srli_epi32(0xFFFF, u, 16), one);
    const __m512i rounded = _mm512_add_epi32(_mm512_add_epi32(u, half), lsb);
    const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, abs_mask), inf);
    const __m512i r = _mm512_and_si512(_mm512_mask_or_epi32(rounded, nan, u, quiet), high);
    _mm512_mask_storeu_epi32(dst + i, live, r);
  }
}

}  // namespace flock::cpu
