// bf16 GEMM on CPUs with AVX512_BF16 (detected at run time): VDPBF16PS multiplies pairs of bf16
// along K and accumulates in f32, so the operands are never widened in memory. C is cut over the
// pool as the f32 GEMM's (split_gemm); each block's thread packs its B panels (32 columns, K in
// pairs: 64 bf16, two zmm, per pair) and its 8-row A blocks (one 32-bit pair per row and K pair),
// and runs the 8×32 micro-kernel (16 accumulators: each broadcast of A feeds two products). The f32
// sums are rounded to bf16 once, at the end (bf16_gemm; bf16_gemm_rounding also takes f32 operands,
// rounded as cast() rounds them, and gives the rounded C widened to f32), handed over in f32
// (bf16_gemm_f32), or
// tile by tile to the caller (bf16_gemm_tiles: the bf16 convolution adds its bias and rounds
// straight into its output). Products under 2^20 multiply-adds, and every call inside a pool task
// (the convolution's image-by-image path), are one block on the calling thread.
#include <immintrin.h>
#include <algorithm>
#include <cstring>
#include "gemm.h"
#include "gemm_kernel.h"
#include "bf16_vec.h"
#include "gemm_pack.h"
#include "scratch.h"
#include "threadpool.h"

namespace flock::cpu {
namespace {

constexpr int64_t kMR = 8, kNR = kBf16TileCols;

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
  // Whether each row's K pairs are whole 32-bit words (an even row stride from a 4-byte aligned
  // start), so packing can move them as words.
  bool words() const { return ld % 2 == 0 && reinterpret_cast<uintptr_t>(p) % 4 == 0; }
  const uint32_t* word(int64_t row) const { return reinterpret_cast<const uint32_t*>(p + row * ld); }
};

alignas(64) const uint16_t kZeros[32] = {};

// dst[2j] = r0[j], dst[2j + 1] = r1[j] for j < 16 (0 for j ≥ cols): two K rows of a panel as pairs.
__attribute__((target("avx512f,avx512bw"))) void interleave_rows(const uint16_t* r0, const uint16_t* r1, int64_t cols,
                                                                 uint16_t* dst) {
  // Lane 2j takes element j of the first source, lane 2j + 1 element j of the second (index 32 + j).
  alignas(64) static const uint16_t idx[32] = {0, 32, 1, 33, 2,  34, 3,  35, 4,  36, 5,  37, 6,  38, 7,  39,
                                               8, 40, 9, 41, 10, 42, 11, 43, 12, 44, 13, 45, 14, 46, 15, 47};
  const __mmask32 keep = cols >= 16 ? 0xFFFF : (__mmask32(1) << std::max<int64_t>(cols, 0)) - 1;
  const __m512i a = _mm512_maskz_loadu_epi16(keep, r0);
  const __m512i b = _mm512_maskz_loadu_epi16(keep, r1);
  _mm512_storeu_si512(dst, _mm512_permutex2var_epi16(a, _mm512_load_si512(idx), b));
}

// Pair q of panel jp (columns c0 = 32·jp on), element by element, zero past n and k.
void pack_b_pair(const Operand& b, int64_t k, int64_t n, int64_t c0, int64_t q, uint16_t* dst) {
  for (int64_t j = 0; j < kNR; ++j) {
    const int64_t col = c0 + j;
    for (int64_t h = 0; h < 2; ++h) {
      const int64_t kk = 2 * q + h;
      dst[j * 2 + h] = col < n && kk < k ? b.at(kk, col) : uint16_t(0);
    }
  }
}

// The `n` columns of B as panels (panel jp at out + jp · pairs · 64), K pair q: 32 columns ×
// (k = 2q, 2q + 1), zero padded past n and k. A B that is not transposed interleaves two K rows per
// pair; a transposed one already holds each column's pair as one word, so its panels are 8×8 word
// transposes (gemm_pack.h).
void pack_b(const Operand& b, int64_t k, int64_t n, int64_t pairs, uint16_t* out) {
  const int64_t whole = k / 2, panels = (n + kNR - 1) / kNR;
  for (int64_t jp = 0; jp < panels; ++jp) {
    const int64_t c0 = jp * kNR;
    uint16_t* panel = out + jp * pairs * kNR * 2;
    int64_t q = 0;
    if (b.trans && b.words()) {
      for (int64_t g = 0; g < kNR; g += 8)
        pack_transposed(b.word(c0 + g), b.ld / 2, std::clamp<int64_t>(n - c0 - g, 0, 8), 8, whole,
                        reinterpret_cast<uint32_t*>(panel) + g, kNR);
      q = whole;
    } else if (!b.trans) {
      const int64_t cols = std::min(kNR, n - c0);
      for (; q < pairs; ++q) {
        const uint16_t* r0 = b.p + 2 * q * b.ld + c0;
        const bool pair = 2 * q + 1 < k;
        const uint16_t* r1 = pair ? r0 + b.ld : kZeros;
        interleave_rows(r0, r1, cols, panel + q * kNR * 2);
        interleave_rows(r0 + 16, pair ? r1 + 16 : kZeros, cols - 16, panel + q * kNR * 2 + 32);
      }
    }
    for (; q < pairs; ++q) pack_b_pair(b, k, n, c0, q, panel + q * kNR * 2);
  }
}

// Rows [i0, i0 + 8) of A as 32-bit pairs: word (q, i) = (A(i, 2q), A(i, 2q + 1)), zero past m and
// k. An A that is not transposed holds each row's pairs as words (8×8 word transposes); a
// transposed one interleaves two K rows of 8 entries per pair.
void pack_a(const Operand& a, int64_t i0, int64_t m, int64_t k, int64_t pairs, uint16_t* out) {
  const bool full = i0 + kMR <= m;
  const int64_t whole = k / 2;
  int64_t q = 0;
  if (!a.trans && a.words()) {
    pack_transposed(a.word(i0), a.ld / 2, std::min(kMR, m - i0), kMR, whole, reinterpret_cast<uint32_t*>(out), kMR);
    q = whole;
  } else if (a.trans && full) {
    for (; q < pairs; ++q) {
      const uint16_t* r0 = a.p + 2 * q * a.ld + i0;
      const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(r0));
      const __m128i hi = 2 * q + 1 < k ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(r0 + a.ld)) : _mm_setzero_si128();
      __m128i* dst = reinterpret_cast<__m128i*>(out + q * kMR * 2);
      _mm_storeu_si128(dst, _mm_unpacklo_epi16(lo, hi));
      _mm_storeu_si128(dst + 1, _mm_unpackhi_epi16(lo, hi));
    }
  }
  for (; q < pairs; ++q) {
    uint16_t* dst = out + q * kMR * 2;
    for (int64_t i = 0; i < kMR; ++i)
      for (int64_t h = 0; h < 2; ++h) {
        const int64_t row = i0 + i, kk = 2 * q + h;
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

// Rows [r0, r0 + rows) × columns [c0, c0 + cols) of a stored operand (row stride ld) as an Operand:
// in place for bf16; f32 is rounded into `buf` as cast() rounds it, each row zero padded to an even
// length (whole K pairs).
Operand block(const Bf16Operand& x, int64_t r0, int64_t rows, int64_t c0, int64_t cols, AlignedBuffer<uint16_t>& buf) {
  if (!x.f32) return {static_cast<const uint16_t*>(x.p) + r0 * x.ld + c0, x.ld, x.trans};
  const float* src = static_cast<const float*>(x.p) + r0 * x.ld + c0;
  const int64_t ld = (cols + 1) & ~int64_t(1);
  uint16_t* d = buf.reserve(static_cast<size_t>(std::max<int64_t>(rows * ld, 1)));
  for (int64_t r = 0; r < rows; ++r) {
    bf16_narrow_cvtne(src + r * x.ld, reinterpret_cast<bf16*>(d + r * ld), cols);
    if (ld > cols) d[r * ld + cols] = 0;
  }
  return {d, ld, x.trans};
}

// Rows [i0, i0 + rows) of op(A), and columns [j0, j0 + cols) of op(B), as Operands from their origin.
Operand rows_of(const Bf16Operand& a, int64_t i0, int64_t rows, int64_t k, AlignedBuffer<uint16_t>& buf) {
  return a.trans ? block(a, 0, k, i0, rows, buf) : block(a, i0, rows, 0, k, buf);
}
Operand cols_of(const Bf16Operand& b, int64_t j0, int64_t cols, int64_t k, AlignedBuffer<uint16_t>& buf) {
  return b.trans ? block(b, j0, cols, 0, k, buf) : block(b, 0, k, j0, cols, buf);
}

// Cuts C over the pool as the f32 GEMM does (split_gemm): each block's thread takes its rows of A
// and columns of B (rounding f32 ones to bf16 first), packs its B panels, then each of its 8-row A
// blocks, and hands every 8×32 f32 tile to `store(i0, j0, rows, cols, tile)`. Buffers are kept per
// thread.
template <class Store>
void run(int64_t m, int64_t n, int64_t k, const Bf16Operand& a, const Bf16Operand& b, Store&& store) {
  const int64_t pairs = (k + 1) / 2;
  const GemmSplit split = split_gemm(m, n, k, kMR, kNR);
  parallel_for(split.blocks(), 1, [&](int64_t t0, int64_t t1) {
    thread_local AlignedBuffer<uint16_t> a_buf, b_buf, a_rounded, b_rounded;
    uint16_t* apk = a_buf.reserve(static_cast<size_t>(pairs * kMR * 2));
    alignas(64) float tile[kMR * kNR];
    for (int64_t t = t0; t < t1; ++t) {
      const GemmSplit::Part part = split.part(t);
      const int64_t j0 = part.q0 * kNR, cols = std::min(n, part.q1 * kNR) - j0;
      const int64_t i0 = part.r0 * kMR, rows = std::min(m, part.r1 * kMR) - i0;
      if (cols <= 0 || rows <= 0) continue;
      uint16_t* bp = b_buf.reserve(static_cast<size_t>((part.q1 - part.q0) * pairs * kNR * 2));
      pack_b(cols_of(b, j0, cols, k, b_rounded), k, cols, pairs, bp);
      const Operand ao = rows_of(a, i0, rows, k, a_rounded);
      for (int64_t r = 0; r < rows; r += kMR) {
        pack_a(ao, r, rows, k, pairs, apk);
        for (int64_t c = 0; c < cols; c += kNR) {
          micro(pairs, apk, bp + c / kNR * pairs * kNR * 2, tile);
          store(i0 + r, j0 + c, std::min(kMR, rows - r), std::min(kNR, cols - c), tile);
        }
      }
    }
  });
}

Bf16Operand bits(const uint16_t* p, int64_t ld, bool trans) { return {p, ld, trans, false}; }

}  // namespace

bool bf16_gemm_available() { return g_has_bf16; }

void bf16_gemm(int64_t m, int64_t n, int64_t k, const uint16_t* a, int64_t lda, bool trans_a, const uint16_t* b, int64_t ldb,
               bool trans_b, uint16_t* c, int64_t ldc) {
  bf16_gemm_rounding(m, n, k, bits(a, lda, trans_a), bits(b, ldb, trans_b), c, ldc, false);
}

void bf16_gemm_rounding(int64_t m, int64_t n, int64_t k, const Bf16Operand& a, const Bf16Operand& b, void* c, int64_t ldc,
                        bool c_f32, bool accumulate) {
  if (accumulate && !c_f32) fail(Code::Internal, "matmul: accumulating into a bf16 C is not supported");
  run(m, n, k, a, b, [&](int64_t i0, int64_t j0, int64_t rows, int64_t cols, const float* tile) {
    for (int64_t i = 0; i < rows; ++i) {
      if (!c_f32) {
        bf16_narrow_add_cvtne(tile + i * kNR, 0.0f, static_cast<bf16*>(c) + (i0 + i) * ldc + j0, cols);
        continue;
      }
      float* dst = static_cast<float*>(c) + (i0 + i) * ldc + j0;
      if (!accumulate) {
        bf16_round_f32(tile + i * kNR, dst, cols);
        continue;
      }
      alignas(64) float rounded[kNR];
      bf16_round_f32(tile + i * kNR, rounded, cols);
      for (int64_t j = 0; j < cols; ++j) dst[j] += rounded[j];
    }
  });
}

void bf16_gemm_tiles(int64_t m, int64_t n, int64_t k, const uint16_t* a, int64_t lda, bool trans_a, const uint16_t* b,
                     int64_t ldb, bool trans_b, const Bf16TileStore& store) {
  run(m, n, k, bits(a, lda, trans_a), bits(b, ldb, trans_b), store);
}

void bf16_gemm_f32(int64_t m, int64_t n, int64_t k, const uint16_t* a, int64_t lda, bool trans_a, const uint16_t* b, int64_t ldb,
                   bool trans_b, float* c, int64_t ldc, bool accumulate) {
  run(m, n, k, bits(a, lda, trans_a), bits(b, ldb, trans_b),
      [&](int64_t i0, int64_t j0, int64_t rows, int64_t cols, const float* tile) {
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
