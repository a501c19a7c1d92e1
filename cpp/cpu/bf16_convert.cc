// f32 -> bf16 with AVX512_BF16 (bf16_vec.h), 16 lanes at a time; the tail, and any block holding
// an f32 subnormal (which the instruction flushes to zero), take the bitwise rounding.
#include <immintrin.h>
#include "bf16_vec.h"

namespace flock::cpu {

void bf16_narrow_cvtne(const float* src, bf16* dst, int64_t n) { bf16_narrow_add_cvtne(src, 0.0f, dst, n); }

// With add = 0 nothing is added, so a -0 stays -0.
__attribute__((target("avx512f,avx512bw,avx512bf16"))) void bf16_narrow_add_cvtne(const float* src, float add, bf16* dst, int64_t n) {
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

}  // namespace flock::cpu
