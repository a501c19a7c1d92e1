// The AVX-512 f32 GEMM micro-kernel: an 8×32 tile of C held in 16 zmm accumulators, each K step
// two 16-float loads of the packed B panel and eight broadcasts of packed A (folded into the FMAs
// as embedded broadcasts). Compiled with a target attribute, so the addon still loads and runs on
// CPUs without AVX-512; the driver (gemm.cc) only calls it when cpu_isa() is avx512.
#include <immintrin.h>
#include "gemm_kernel.h"

namespace flock::cpu {
namespace {

constexpr int64_t kMR = 8, kNR = 32;

__attribute__((target("avx512f"))) void micro_avx512(int64_t kc, const float* a, const float* b, float* c, int64_t ldc,
                                                     bool accumulate) {
  __m512 c00 = _mm512_setzero_ps(), c01 = _mm512_setzero_ps(), c10 = _mm512_setzero_ps(), c11 = _mm512_setzero_ps();
  __m512 c20 = _mm512_setzero_ps(), c21 = _mm512_setzero_ps(), c30 = _mm512_setzero_ps(), c31 = _mm512_setzero_ps();
  __m512 c40 = _mm512_setzero_ps(), c41 = _mm512_setzero_ps(), c50 = _mm512_setzero_ps(), c51 = _mm512_setzero_ps();
  __m512 c60 = _mm512_setzero_ps(), c61 = _mm512_setzero_ps(), c70 = _mm512_setzero_ps(), c71 = _mm512_setzero_ps();
  for (int r = 0; r < kMR; ++r) {
    _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc + 16), _MM_HINT_T0);
  }
#define FLOCK_ROW(ap, i, r0, r1)               \
  do {                                         \
    const __m512 av = _mm512_set1_ps((ap)[i]); \
    r0 = _mm512_fmadd_ps(av, b0, r0);          \
    r1 = _mm512_fmadd_ps(av, b1, r1);          \
  } while (0)
#define FLOCK_K_STEP(a, b)                                              \
  do {                                                                  \
    const __m512 b0 = _mm512_load_ps(b), b1 = _mm512_load_ps((b) + 16); \
    FLOCK_ROW(a, 0, c00, c01);                                          \
    FLOCK_ROW(a, 1, c10, c11);                                          \
    FLOCK_ROW(a, 2, c20, c21);                                          \
    FLOCK_ROW(a, 3, c30, c31);                                          \
    FLOCK_ROW(a, 4, c40, c41);                                          \
    FLOCK_ROW(a, 5, c50, c51);                                          \
    FLOCK_ROW(a, 6, c60, c61);                                          \
    FLOCK_ROW(a, 7, c70, c71);                                          \
  } while (0)
  int64_t p = 0;
  for (; p + 4 <= kc; p += 4) {
    _mm_prefetch(reinterpret_cast<const char*>(b + 8 * kNR), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(b + 8 * kNR + 16), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(b + 10 * kNR), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(b + 10 * kNR + 16), _MM_HINT_T0);
    FLOCK_K_STEP(a, b);
    FLOCK_K_STEP(a + kMR, b + kNR);
    FLOCK_K_STEP(a + 2 * kMR, b + 2 * kNR);
    FLOCK_K_STEP(a + 3 * kMR, b + 3 * kNR);
    a += 4 * kMR;
    b += 4 * kNR;
  }
  for (; p < kc; ++p) {
    FLOCK_K_STEP(a, b);
    a += kMR;
    b += kNR;
  }
#undef FLOCK_K_STEP
#undef FLOCK_ROW
#define FLOCK_PUT_ROW(row, lo, hi)                         \
  do {                                                     \
    __m512 l_ = (lo), h_ = (hi);                           \
    if (accumulate) {                                      \
      l_ = _mm512_add_ps(l_, _mm512_loadu_ps(row));        \
      h_ = _mm512_add_ps(h_, _mm512_loadu_ps((row) + 16)); \
    }                                                      \
    _mm512_storeu_ps(row, l_);                             \
    _mm512_storeu_ps((row) + 16, h_);                      \
  } while (0)
  FLOCK_PUT_ROW(c, c00, c01);
  FLOCK_PUT_ROW(c + ldc, c10, c11);
  FLOCK_PUT_ROW(c + 2 * ldc, c20, c21);
  FLOCK_PUT_ROW(c + 3 * ldc, c30, c31);
  FLOCK_PUT_ROW(c + 4 * ldc, c40, c41);
  FLOCK_PUT_ROW(c + 5 * ldc, c50, c51);
  FLOCK_PUT_ROW(c + 6 * ldc, c60, c61);
  FLOCK_PUT_ROW(c + 7 * ldc, c70, c71);
#undef FLOCK_PUT_ROW
}

}  // namespace

// KC 256: a K slice of the 32-column B panel is 32 KB, streamed from L2 alongside the 8 KB A panel.
GemmKernel<float> sgemm_avx512_kernel() { return {micro_avx512, kMR, kNR, 256, 128, 3072, "avx512"}; }

}  // namespace flock::cpu
