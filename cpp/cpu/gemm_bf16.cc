// bf16 GEMM on CPUs with AVX512_BF16 (detected at run time): VDPBF16PS multiplies pairs of bf16
// along K and accumulates in f32, so the operands are never widened in memory. B is packed once
// into 32-column panels with K in pairs (64 bf16, two zmm, per pair); each pool thread packs the
// 8-row A blocks it owns the same way (one 32-bit pair per row and K pair) and runs the 8×32
// micro-kernel (16 accumulators: each broadcast of A feeds two products) over every panel. The f32 sums are rounded to bf16 once, at the end (bf16_gemm), or
// handed over in f32 (bf16_gemm_f32, for the bf16 convolution). Products under 2^20 multiply-adds
// run on the calling thread, as the f32 GEMM's.
#include <immintrin.h>
#include <algorithm>
#include <cstring>
#include <vector>
#include "gemm.h"
#include "threadpool.h"

namespace flock::cpu {
namespace {

constexpr int64_t kMR = 8, kNR = 32;

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

// dst[2j] = r0[j], dst[2j + 1] = r1[j] for j < 16: two K rows of a panel as pairs.
__attribute__((target("avx512f,avx512bw"))) void interleave_rows(const uint16_t* r0, const uint16_t* r1, uint16_t* dst) {
  // Lane 2j takes element j of the first source, lane 2j + 1 element j of the second (index 32 + j).
  alignas(64) static const uint16_t idx[32] = {0, 32, 1, 33, 2,  34, 3,  35, 4,  36, 5,  37, 6,  38, 7,  39,
                                               8, 40, 9, 41, 10, 42, 11, 43, 12, 44, 13, 45, 14, 46, 15, 47};
  const __m512i a = _mm512_maskz_loadu_epi16(0xFFFF, r0);
  const __m512i b = _mm512_maskz_loadu_epi16(0xFFFF, r1);
  _mm512_storeu_si512(dst, _mm512_permutex2var_epi16(a, _mm512_load_si512(idx), b));
}

// Panel jp, K pair q: 32 columns × (k = 2q, 2q + 1), zero padded past n and k. Whole panels and
// pairs take the direct paths: a transposed B already holds each column's pair side by side.
void pack_b(const Operand& b, int64_t k, int64_t n, int64_t pairs, uint16_t* out) {
  const int64_t panels = (n + kNR - 1) / kNR;
  // Small B packs on the calling thread: a pool barrier costs more than the copy.
  const int64_t grain = k * n < (int64_t(1) << 16) ? panels : 1;
  parallel_for(panels, grain, [&](int64_t pb, int64_t pe) {
    for (int64_t jp = pb; jp < pe; ++jp) {
      const int64_t c0 = jp * kNR;
      const bool full = c0 + kNR <= n;
      for (int64_t q = 0; q < pairs; ++q) {
        uint16_t* dst = out + (jp * pairs + q) * kNR * 2;
        const int64_t k0 = 2 * q;
        if (full && k0 + 1 < k) {
          if (b.trans) {
            for (int64_t j = 0; j < kNR; ++j) std::memcpy(dst + j * 2, b.p + (c0 + j) * b.ld + k0, 4);
          } else {
            interleave_rows(b.p + k0 * b.ld + c0, b.p + (k0 + 1) * b.ld + c0, dst);
            interleave_rows(b.p + k0 * b.ld + c0 + 16, b.p + (k0 + 1) * b.ld + c0 + 16, dst + 32);
          }
          continue;
        }
        for (int64_t j = 0; j < kNR; ++j) {
          const int64_t col = c0 + j;
          for (int64_t h = 0; h < 2; ++h) {
            const int64_t kk = k0 + h;
            dst[j * 2 + h] = col < n && kk < k ? b.at(kk, col) : uint16_t(0);
          }
        }
      }
    }
  });
}

// Rows [i0, i0 + 8) of A as 32-bit pairs: word (q, i) = (A(i, 2q), A(i, 2q + 1)).
void pack_a(const Operand& a, int64_t i0, int64_t m, int64_t k, int64_t pairs, uint16_t* out) {
  const bool full = i0 + kMR <= m;
  for (int64_t q = 0; q < pairs; ++q) {
    const int64_t k0 = 2 * q;
    uint16_t* dst = out + q * kMR * 2;
    if (full && k0 + 1 < k) {
      if (!a.trans) {
        for (int64_t i = 0; i < kMR; ++i) std::memcpy(dst + i * 2, a.p + (i0 + i) * a.ld + k0, 4);
      } else {
        const uint16_t* r0 = a.p + k0 * a.ld + i0;
        const uint16_t* r1 = r0 + a.ld;
        for (int64_t i = 0; i < kMR; ++i) {
          dst[i * 2] = r0[i];
          dst[i * 2 + 1] = r1[i];
        }
      }
      continue;
    }
    for (int64_t i = 0; i < kMR; ++i)
      for (int64_t h = 0; h < 2; ++h) {
        const int64_t row = i0 + i, kk = k0 + h;
        dst[i * 2 + h] = row < m && kk < k ? a.at(row, kk) : uint16_t(0);
      }
  }
}

__attribute__((target("avx512f,avx512bf16"))) void micro(int64_t pairs, const uint16_t* a, const uint16_t* b, float* tile) {
  __m512 lo[kMR], hi[kMR];
  for (int64_t i = 0; i < kMR; ++i) lo[i] = hi[i] = _mm512_setzero_ps();
  for (int64_t q = 0; q < pairs; ++q) {
    const __m512bh b0 = (__m512bh)_mm512_loadu_si512(b + q * kNR * 2);
    const __m512bh b1 = (__m512bh)_mm512_loadu_si512(b + q * kNR * 2 + 32);
    const int32_t* ap = reinterpret_cast<const int32_t*>(a + q * kMR * 2);
    for (int64_t i = 0; i < kMR; ++i) {
      const __m512bh av = (__m512bh)_mm512_set1_epi32(ap[i]);
      lo[i] = _mm512_dpbf16_ps(lo[i], av, b0);
      hi[i] = _mm512_dpbf16_ps(hi[i], av, b1);
    }
  }
  for (int64_t i = 0; i < kMR; ++i) {
    _mm512_storeu_ps(tile + i * kNR, lo[i]);
    _mm512_storeu_ps(tile + i * kNR + 16, hi[i]);
  }
}

// Rounds a tile row to bf16 (VCVTNEPS2BF16: to nearest even, as the bf16 type).
__attribute__((target("avx512f,avx512bf16"))) void round_row(const float* src, uint16_t* dst, int64_t cols) {
  int64_t j = 0;
  for (; j + 16 <= cols; j += 16) {
    const __m256bh r = _mm512_cvtneps_pbh(_mm512_loadu_ps(src + j));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + j), (__m256i)r);
  }
  for (; j < cols; ++j) dst[j] = bf16(src[j]).bits;
}

// Packs B once, then each pool thread packs its 8-row A blocks and hands every 8×16 f32 tile to
// `store(i0, j0, rows, cols, tile)`.
template <class Store>
void run(int64_t m, int64_t n, int64_t k, const uint16_t* a, int64_t lda, bool trans_a, const uint16_t* b, int64_t ldb, bool trans_b,
         Store store) {
  const int64_t pairs = (k + 1) / 2, panels = (n + kNR - 1) / kNR, blocks = (m + kMR - 1) / kMR;
  std::vector<uint16_t> bp(static_cast<size_t>(panels * pairs * kNR * 2));
  pack_b({b, ldb, trans_b}, k, n, pairs, bp.data());
  const Operand ao{a, lda, trans_a};
  // As the f32 GEMM: under 2^20 multiply-adds one thread does it all.
  const int64_t grain = m * n * k < (int64_t(1) << 20) ? blocks : 1;
  parallel_for(blocks, grain, [&](int64_t bb, int64_t be) {
    std::vector<uint16_t> apk(static_cast<size_t>(pairs * kMR * 2));
    alignas(64) float tile[kMR * kNR];
    for (int64_t blk = bb; blk < be; ++blk) {
      const int64_t i0 = blk * kMR;
      pack_a(ao, i0, m, k, pairs, apk.data());
      for (int64_t jp = 0; jp < panels; ++jp) {
        micro(pairs, apk.data(), bp.data() + jp * pairs * kNR * 2, tile);
        store(i0, jp * kNR, std::min(kMR, m - i0), std::min(kNR, n - jp * kNR), tile);
      }
    }
  });
}

}  // namespace

bool bf16_gemm_available() { return g_has_bf16; }

void bf16_gemm(int64_t m, int64_t n, int64_t k, const uint16_t* a, int64_t lda, bool trans_a, const uint16_t* b, int64_t ldb, bool trans_b,
               uint16_t* c, int64_t ldc) {
  run(m, n, k, a, lda, trans_a, b, ldb, trans_b, [&](int64_t i0, int64_t j0, int64_t rows, int64_t cols, const float* tile) {
    for (int64_t i = 0; i < rows; ++i) round_row(tile + i * kNR, c + (i0 + i) * ldc + j0, cols);
  });
}

void bf16_gemm_f32(int64_t m, int64_t n, int64_t k, const uint16_t* a, int64_t lda, bool trans_a, const uint16_t* b, int64_t ldb, bool trans_b,
                   float* c, int64_t ldc, bool accumulate) {
  run(m, n, k, a, lda, trans_a, b, ldb, trans_b, [&](int64_t i0, int64_t j0, int64_t rows, int64_t cols, const float* tile) {
    for (int64_t i = 0; i < rows; ++i) {
      float* dst = c + (i0 + i) * ldc + j0;
      if (accumulate)
        for (int64_t j = 0; j < cols; ++j) dst[j] += tile[i * kNR + j];
      else
        std::memcpy(dst, tile + i * kNR, sizeof(float) * cols);
    }
  });
}

}  // namespace flock::cpu
