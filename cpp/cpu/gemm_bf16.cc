// bf16 GEMM on CPUs with AVX512_BF16 (detected at run time): VDPBF16PS multiplies pairs of bf16
// along K and accumulates in f32, so the operands are never widened in memory. B is packed once
// into 16-column panels with K in pairs (32 bf16, one zmm, per pair); each pool thread packs the
// 8-row A blocks it owns the same way (one 32-bit pair per row and K pair) and runs the 8×16
// micro-kernel over every panel. The f32 sums are rounded to bf16 once, at the end.
#include <immintrin.h>
#include <algorithm>
#include <cstring>
#include <vector>
#include "gemm.h"
#include "threadpool.h"

namespace flock::cpu {
namespace {

constexpr int64_t kMR = 8, kNR = 16;

bool detect() {
#if defined(__x86_64__)
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16");
#else
  return false;
#endif
}

const bool g_has_bf16 = detect();

struct Operand {
  const uint16_t* p;
  int64_t ld;
  bool trans;
  uint16_t at(int64_t r, int64_t c) const { return trans ? p[c * ld + r] : p[r * ld + c]; }
};

// Panel jp, K pair q: 16 columns × (k = 2q, 2q + 1), zero padded past n and k.
void pack_b(const Operand& b, int64_t k, int64_t n, int64_t pairs, uint16_t* out) {
  const int64_t panels = (n + kNR - 1) / kNR;
  parallel_for(panels, 1, [&](int64_t pb, int64_t pe) {
    for (int64_t jp = pb; jp < pe; ++jp)
      for (int64_t q = 0; q < pairs; ++q) {
        uint16_t* dst = out + (jp * pairs + q) * kNR * 2;
        for (int64_t j = 0; j < kNR; ++j) {
          const int64_t col = jp * kNR + j;
          for (int64_t h = 0; h < 2; ++h) {
            const int64_t kk = 2 * q + h;
            dst[j * 2 + h] = col < n && kk < k ? b.at(kk, col) : uint16_t(0);
          }
        }
      }
  });
}

// Rows [i0, i0 + 8) of A as 32-bit pairs: word (q, i) = (A(i, 2q), A(i, 2q + 1)).
void pack_a(const Operand& a, int64_t i0, int64_t m, int64_t k, int64_t pairs, uint16_t* out) {
  for (int64_t q = 0; q < pairs; ++q)
    for (int64_t i = 0; i < kMR; ++i)
      for (int64_t h = 0; h < 2; ++h) {
        const int64_t row = i0 + i, kk = 2 * q + h;
        out[(q * kMR + i) * 2 + h] = row < m && kk < k ? a.at(row, kk) : uint16_t(0);
      }
}

__attribute__((target("avx512f,avx512bf16"))) void micro(int64_t pairs, const uint16_t* a, const uint16_t* b, float* tile) {
  __m512 acc[kMR];
  for (int64_t i = 0; i < kMR; ++i) acc[i] = _mm512_setzero_ps();
  for (int64_t q = 0; q < pairs; ++q) {
    const __m512bh bv = (__m512bh)_mm512_loadu_si512(b + q * kNR * 2);
    const int32_t* ap = reinterpret_cast<const int32_t*>(a + q * kMR * 2);
    for (int64_t i = 0; i < kMR; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], (__m512bh)_mm512_set1_epi32(ap[i]), bv);
  }
  for (int64_t i = 0; i < kMR; ++i) _mm512_storeu_ps(tile + i * kNR, acc[i]);
}

}  // namespace

bool bf16_gemm_available() { return g_has_bf16; }

void bf16_gemm(int64_t m, int64_t n, int64_t k, const uint16_t* a, int64_t lda, bool trans_a, const uint16_t* b, int64_t ldb, bool trans_b,
               uint16_t* c, int64_t ldc) {
  const int64_t pairs = (k + 1) / 2, panels = (n + kNR - 1) / kNR, blocks = (m + kMR - 1) / kMR;
  std::vector<uint16_t> bp(static_cast<size_t>(panels * pairs * kNR * 2));
  pack_b({b, ldb, trans_b}, k, n, pairs, bp.data());
  const Operand ao{a, lda, trans_a};
  parallel_for(blocks, 1, [&](int64_t bb, int64_t be) {
    std::vector<uint16_t> apk(static_cast<size_t>(pairs * kMR * 2));
    alignas(64) float tile[kMR * kNR];
    for (int64_t blk = bb; blk < be; ++blk) {
      const int64_t i0 = blk * kMR;
      pack_a(ao, i0, m, k, pairs, apk.data());
      for (int64_t jp = 0; jp < panels; ++jp) {
        micro(pairs, apk.data(), bp.data() + jp * pairs * kNR * 2, tile);
        const int64_t rows = std::min(kMR, m - i0), cols = std::min(kNR, n - jp * kNR);
        for (int64_t i = 0; i < rows; ++i) {
          uint16_t* dst = c + (i0 + i) * ldc + jp * kNR;
          for (int64_t j = 0; j < cols; ++j) dst[j] = bf16(tile[i * kNR + j]).bits;
        }
      }
    }
  });
}

}  // namespace flock::cpu
