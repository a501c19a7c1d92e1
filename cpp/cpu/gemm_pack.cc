// Transposing GEMM packing (gemm_pack.h): the AVX2 path is compiled with a target attribute and
// called only when cpu_isa() allows it, so the addon still runs on CPUs without AVX2.
#include "gemm_pack.h"
#include <immintrin.h>
#include "isa.h"

namespace flock::cpu {
namespace {

// T is float, or uint32_t for pairs of bf16 (moved as bits: the AVX2 loads and stores below may
// alias any type).
template <class T>
void pack_transposed_scalar(const T* src, int64_t ld, int64_t rows, int64_t width, int64_t p0, int64_t kc, T* d,
                            int64_t dstride) {
  for (int64_t r = 0; r < width; ++r)
    for (int64_t p = p0; p < kc; ++p) d[p * dstride + r] = r < rows ? src[r * ld + p] : T(0);
}

template <class T>
__attribute__((target("avx2"))) void pack_transposed_avx2(const T* src_t, int64_t ld, int64_t rows, int64_t width, int64_t kc,
                                                          T* d_t, int64_t dstride) {
  const float* src = reinterpret_cast<const float*>(src_t);
  float* d = reinterpret_cast<float*>(d_t);
  const __m256 zero = _mm256_setzero_ps();
  const __m256i keep = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(width)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  int64_t p = 0;
  for (; p + 8 <= kc; p += 8) {
#define FLOCK_ROW(r) ((r) < rows ? _mm256_loadu_ps(src + (r)*ld + p) : zero)
    const __m256 r0 = FLOCK_ROW(0), r1 = FLOCK_ROW(1), r2 = FLOCK_ROW(2), r3 = FLOCK_ROW(3);
    const __m256 r4 = FLOCK_ROW(4), r5 = FLOCK_ROW(5), r6 = FLOCK_ROW(6), r7 = FLOCK_ROW(7);
#undef FLOCK_ROW
    // Pairs of rows interleaved, then quadruples, then the 128-bit halves: column j of the 8×8
    // block ends up in o[j].
    const __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
    const __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
    const __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
    const __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
    const __m256 u0 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0)), u1 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
    const __m256 u2 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0)), u3 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
    const __m256 u4 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(1, 0, 1, 0)), u5 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(3, 2, 3, 2));
    const __m256 u6 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(1, 0, 1, 0)), u7 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(3, 2, 3, 2));
    const __m256 o[8] = {_mm256_permute2f128_ps(u0, u4, 0x20), _mm256_permute2f128_ps(u1, u5, 0x20),
                         _mm256_permute2f128_ps(u2, u6, 0x20), _mm256_permute2f128_ps(u3, u7, 0x20),
                         _mm256_permute2f128_ps(u0, u4, 0x31), _mm256_permute2f128_ps(u1, u5, 0x31),
                         _mm256_permute2f128_ps(u2, u6, 0x31), _mm256_permute2f128_ps(u3, u7, 0x31)};
    float* out = d + p * dstride;
    if (width == 8)
      for (int j = 0; j < 8; ++j) _mm256_storeu_ps(out + j * dstride, o[j]);
    else
      for (int j = 0; j < 8; ++j) _mm256_maskstore_ps(out + j * dstride, keep, o[j]);
  }
  pack_transposed_scalar(src_t, ld, rows, width, p, kc, d_t, dstride);
}

template <class T>
void pack_any(const T* src, int64_t ld, int64_t rows, int64_t width, int64_t kc, T* d, int64_t dstride) {
  if (cpu_isa() != Isa::generic) return pack_transposed_avx2(src, ld, rows, width, kc, d, dstride);
  pack_transposed_scalar(src, ld, rows, width, 0, kc, d, dstride);
}

}  // namespace

void pack_transposed(const float* src, int64_t ld, int64_t rows, int64_t width, int64_t kc, float* d, int64_t dstride) {
  pack_any(src, ld, rows, width, kc, d, dstride);
}
void pack_transposed(const uint32_t* src, int64_t ld, int64_t rows, int64_t width, int64_t kc, uint32_t* d, int64_t dstride) {
  pack_any(src, ld, rows, width, kc, d, dstride);
}

}  // namespace flock::cpu
