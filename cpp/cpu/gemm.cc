// Blocked, packed GEMM in the style of BLIS: K is cut into KC slices, A and B are packed into
// MR-row and NR-column panels (zero padded), and a register-blocked micro-kernel computes each
// MR×NR tile. The f32 micro-kernel is chosen at run time for the CPU's instruction set (isa.h):
// AVX-512 (gemm_avx512.cc), AVX2+FMA, else a portable one; f64 takes the portable path. Tile and
// cache blocking sizes come with the kernel (gemm_kernel.h). C is split into one block per pool
// thread, each an independent GEMM that packs only what it reads.
#include "gemm.h"
#include "gemm_kernel.h"
#include "gemm_pack.h"
#include "isa.h"
#include "loops.h"
#include <immintrin.h>
#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>
#include "../kernels.h"
#include "scratch.h"
#include "threadpool.h"

namespace flock::cpu {
namespace {

constexpr int64_t kMR = 6, kNR = 16;

// Portable micro-kernel; the compiler vectorises the inner j loop.
template <class T>
void micro_generic(int64_t kc, const T* a, const T* b, T* c, int64_t ldc, bool accumulate) {
  T acc[kMR][kNR] = {};
  for (int64_t p = 0; p < kc; ++p) {
    const T* bp = b + p * kNR;
    for (int64_t i = 0; i < kMR; ++i) {
      const T av = a[p * kMR + i];
      for (int64_t j = 0; j < kNR; ++j) acc[i][j] += av * bp[j];
    }
  }
  for (int64_t i = 0; i < kMR; ++i)
    for (int64_t j = 0; j < kNR; ++j) c[i * ldc + j] = accumulate ? c[i * ldc + j] + acc[i][j] : acc[i][j];
}

__attribute__((target("avx2,fma"))) void micro_avx2(int64_t kc, const float* a, const float* b, float* c, int64_t ldc,
                                                    bool accumulate) {
  __m256 c00 = _mm256_setzero_ps(), c01 = _mm256_setzero_ps(), c10 = _mm256_setzero_ps(), c11 = _mm256_setzero_ps();
  __m256 c20 = _mm256_setzero_ps(), c21 = _mm256_setzero_ps(), c30 = _mm256_setzero_ps(), c31 = _mm256_setzero_ps();
  __m256 c40 = _mm256_setzero_ps(), c41 = _mm256_setzero_ps(), c50 = _mm256_setzero_ps(), c51 = _mm256_setzero_ps();
  // The C tile is written at the end: start pulling its rows into cache now.
  for (int r = 0; r < kMR; ++r) _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc), _MM_HINT_T0);
#define FLOCK_K_STEP(a, b)                                             \
  do {                                                                 \
    const __m256 b0 = _mm256_load_ps(b), b1 = _mm256_load_ps((b) + 8); \
    __m256 av = _mm256_broadcast_ss((a) + 0);                          \
    c00 = _mm256_fmadd_ps(av, b0, c00);                                \
    c01 = _mm256_fmadd_ps(av, b1, c01);                                \
    av = _mm256_broadcast_ss((a) + 1);                                 \
    c10 = _mm256_fmadd_ps(av, b0, c10);                                \
    c11 = _mm256_fmadd_ps(av, b1, c11);                                \
    av = _mm256_broadcast_ss((a) + 2);                                 \
    c20 = _mm256_fmadd_ps(av, b0, c20);                                \
    c21 = _mm256_fmadd_ps(av, b1, c21);                                \
    av = _mm256_broadcast_ss((a) + 3);                                 \
    c30 = _mm256_fmadd_ps(av, b0, c30);                                \
    c31 = _mm256_fmadd_ps(av, b1, c31);                                \
    av = _mm256_broadcast_ss((a) + 4);                                 \
    c40 = _mm256_fmadd_ps(av, b0, c40);                                \
    c41 = _mm256_fmadd_ps(av, b1, c41);                                \
    av = _mm256_broadcast_ss((a) + 5);                                 \
    c50 = _mm256_fmadd_ps(av, b0, c50);                                \
    c51 = _mm256_fmadd_ps(av, b1, c51);                                \
  } while (0)
  // Four k steps per iteration: fewer loop branches, and the prefetch runs ahead of the panels.
  int64_t p = 0;
  for (; p + 4 <= kc; p += 4) {
    _mm_prefetch(reinterpret_cast<const char*>(a + 4 * kMR * 4), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(b + 4 * kNR * 4), _MM_HINT_T0);
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
  // Written out, not a lambda: a lambda would not inherit this function's target ISA.
#define FLOCK_PUT_ROW(row, lo, hi)                        \
  do {                                                    \
    __m256 l_ = (lo), h_ = (hi);                          \
    if (accumulate) {                                     \
      l_ = _mm256_add_ps(l_, _mm256_loadu_ps(row));       \
      h_ = _mm256_add_ps(h_, _mm256_loadu_ps((row) + 8)); \
    }                                                     \
    _mm256_storeu_ps(row, l_);                            \
    _mm256_storeu_ps((row) + 8, h_);                      \
  } while (0)
  FLOCK_PUT_ROW(c, c00, c01);
  FLOCK_PUT_ROW(c + ldc, c10, c11);
  FLOCK_PUT_ROW(c + 2 * ldc, c20, c21);
  FLOCK_PUT_ROW(c + 3 * ldc, c30, c31);
  FLOCK_PUT_ROW(c + 4 * ldc, c40, c41);
  FLOCK_PUT_ROW(c + 5 * ldc, c50, c51);
#undef FLOCK_PUT_ROW
}

const GemmKernel<float> kAvx2Sgemm{micro_avx2, kMR, kNR, 256, 96, 3072, "avx2"};
const GemmKernel<float> kGenericSgemm{micro_generic<float>, kMR, kNR, 256, 96, 3072, "generic"};
const GemmKernel<double> kGenericDgemm{micro_generic<double>, kMR, kNR, 256, 96, 3072, "generic"};

const GemmKernel<float>& sgemm_kernel() {
  static const GemmKernel<float> avx512 = sgemm_avx512_kernel();
  switch (cpu_isa()) {
    case Isa::avx512:
      return avx512;
    case Isa::avx2:
      return kAvx2Sgemm;
    case Isa::generic:
      break;
  }
  return kGenericSgemm;
}

// Packs rows [i0, i0+mc) × cols [p0, p0+kc) of op(A) into MR-row panels: panel[p*MR + i].
template <class T>
void pack_a(const GemmArgs<T>& g, const int64_t kMR, int64_t i0, int64_t mc, int64_t p0, int64_t kc, T* dst) {
  for (int64_t ip = 0; ip < mc; ip += kMR) {
    const int64_t mr = std::min(kMR, mc - ip);
    T* d = dst + ip * kc;
    if (g.ta) {  // op(A) = Aᵀ: a row of the panel is contiguous in memory
      for (int64_t p = 0; p < kc; ++p) {
        const T* src = g.a + (p0 + p) * g.lda + i0 + ip;
        for (int64_t i = 0; i < mr; ++i) d[p * kMR + i] = src[i];
        for (int64_t i = mr; i < kMR; ++i) d[p * kMR + i] = T(0);
      }
      continue;
    }
    if constexpr (std::is_same_v<T, float>) {
      if (kMR <= 8) {  // the MR rows along k, transposed 8×8 in registers
        pack_transposed(g.a + (i0 + ip) * g.lda + p0, g.lda, mr, kMR, kc, d, kMR);
        continue;
      }
    }
    // Read each of the MR rows along k, so memory is walked in order.
    for (int64_t i = 0; i < mr; ++i) {
      const T* src = g.a + (i0 + ip + i) * g.lda + p0;
      for (int64_t p = 0; p < kc; ++p) d[p * kMR + i] = src[p];
    }
    for (int64_t i = mr; i < kMR; ++i)
      for (int64_t p = 0; p < kc; ++p) d[p * kMR + i] = T(0);
  }
}

// Packs rows [p0, p0+kc) × cols [j0, j0+nc) of op(B) into NR-column panels: panel[p*NR + j].
template <class T>
void pack_b_panel(const GemmArgs<T>& g, const int64_t kNR, int64_t p0, int64_t kc, int64_t j0, int64_t nr, T* d) {
  if (!g.tb) {
    if (nr == kNR) {
      for (int64_t p = 0; p < kc; ++p) std::memcpy(d + p * kNR, g.b + (p0 + p) * g.ldb + j0, sizeof(T) * kNR);
      return;
    }
    for (int64_t p = 0; p < kc; ++p) {
      const T* src = g.b + (p0 + p) * g.ldb + j0;
      for (int64_t j = 0; j < nr; ++j) d[p * kNR + j] = src[j];
      for (int64_t j = nr; j < kNR; ++j) d[p * kNR + j] = T(0);
    }
    return;
  }
  // op(B) = Bᵀ: each panel column is a contiguous row of B, so walk it along k.
  if constexpr (std::is_same_v<T, float>) {
    if (kNR % 8 == 0) {  // eight columns at a time, transposed in registers
      for (int64_t j = 0; j < kNR; j += 8)
        pack_transposed(g.b + (j0 + j) * g.ldb + p0, g.ldb, std::clamp<int64_t>(nr - j, 0, 8), 8, kc, d + j, kNR);
      return;
    }
  }
  for (int64_t j = 0; j < nr; ++j) {
    const T* src = g.b + (j0 + j) * g.ldb + p0;
    for (int64_t p = 0; p < kc; ++p) d[p * kNR + j] = src[p];
  }
  for (int64_t j = nr; j < kNR; ++j)
    for (int64_t p = 0; p < kc; ++p) d[p * kNR + j] = T(0);
}

// One thread's GEMM on its own block of C, in BLIS's loop order: a KC×NC slice of B packed once
// (L3), then per MC-row block of A packed (L2), every NR panel of the slice (L1) against it.
// Blocks are cut to equal sizes rather than full blocks and a ragged remainder: a K of 784 runs as
// four slices of 196 (not 3×256 + 16), an M of 100 as blocks of 54 and 46.
template <class T>
void gemm_serial(const GemmArgs<T>& g, const GemmKernel<T>& kern) {
  const MicroKernel<T> micro = kern.micro;
  const int64_t kMR = kern.mr, kNR = kern.nr, kKC = kern.kc, kMC = kern.mc, kNC = kern.nc;
  const int64_t kslices = (g.k + kKC - 1) / kKC, kcb = (g.k + kslices - 1) / kslices;
  const int64_t mparts = (g.m + kMC - 1) / kMC;
  const int64_t mc_max = ((g.m + mparts - 1) / mparts + kMR - 1) / kMR * kMR;
  const int64_t nc_max = std::min(kNC, (g.n + kNR - 1) / kNR * kNR);
  // Per-thread buffers, kept between calls: small GEMMs (an MLP's) would otherwise pay for
  // allocation on every call.
  thread_local AlignedBuffer<T> packed_a, packed_b;
  packed_a.reserve(static_cast<size_t>(mc_max * kcb));
  packed_b.reserve(static_cast<size_t>(nc_max * kcb));
  alignas(64) T edge[kMaxMR * kMaxNR];
  for (int64_t jc = 0; jc < g.n; jc += kNC) {
    const int64_t nc = std::min(kNC, g.n - jc);
    const int64_t npanels = (nc + kNR - 1) / kNR;
    for (int64_t pc = 0; pc < g.k; pc += kcb) {
      const int64_t kc = std::min(kcb, g.k - pc);
      const bool accumulate = pc > 0 || g.accumulate;
      for (int64_t q = 0; q < npanels; ++q)
        pack_b_panel(g, kNR, pc, kc, jc + q * kNR, std::min(kNR, nc - q * kNR), packed_b.data() + q * kNR * kc);
      for (int64_t ic = 0; ic < g.m; ic += mc_max) {
        const int64_t mc = std::min(mc_max, g.m - ic);
        pack_a(g, kMR, ic, mc, pc, kc, packed_a.data());
        for (int64_t q = 0; q < npanels; ++q) {
          const int64_t j = jc + q * kNR, nr = std::min(kNR, nc - q * kNR);
          const T* bp = packed_b.data() + q * kNR * kc;
          for (int64_t i = 0; i < mc; i += kMR) {
            const int64_t mr = std::min(kMR, mc - i);
            const T* ap = packed_a.data() + i * kc;
            T* cp = g.c + (ic + i) * g.ldc + j;
            if (mr == kMR && nr == kNR) {
              micro(kc, ap, bp, cp, g.ldc, accumulate);
            } else {
              for (int64_t r = 0; r < mr; ++r)
                for (int64_t s = 0; s < nr; ++s) edge[r * kNR + s] = accumulate ? cp[r * g.ldc + s] : T(0);
              micro(kc, ap, bp, edge, kNR, true);
              for (int64_t r = 0; r < mr; ++r)
                for (int64_t s = 0; s < nr; ++s) cp[r * g.ldc + s] = edge[r * kNR + s];
            }
          }
        }
      }
    }
  }
}

// Products too small to repay packing (a narrow MLP's layers, an attention head's 16×16 scores):
// C is computed in 4-row × one-vector blocks straight from op(A) and the rows of op(B), the four
// accumulators in registers, with masked loads and stores at the right edge: no packing and no edge
// tiles. op(B) = Bᵀ is first transposed into a per-thread buffer.
constexpr int64_t kSmallGemm = int64_t(1) << 15;  // multiply-adds
constexpr int64_t kSmallGemmMaxN = 256;

template <class T>
void small_rows(const GemmArgs<T>& g, const T* b, int64_t ldb) {
  for (int64_t i = 0; i < g.m; ++i) {
    T* c = g.c + i * g.ldc;
    for (int64_t j = 0; j < g.n; ++j) {
      T acc = T(0);
      for (int64_t p = 0; p < g.k; ++p) acc += (g.ta ? g.a[p * g.lda + i] : g.a[i * g.lda + p]) * b[p * ldb + j];
      c[j] = g.accumulate ? c[j] + acc : acc;
    }
  }
}

// The vector kernels' body: V is the register type, W its width, then its zero, masked load and
// store of the first w lanes, fused multiply-add, broadcast and add. Accumulating adds each finished
// sum to C, as adding the product afterwards would, rather than starting the sum from C.
#define FLOCK_SMALL_GEMM_BODY(V, W, ZERO, LOAD, STORE, FMA, SET1, ADD)                                                  \
  const auto at = [&](int64_t i, int64_t p) { return g.ta ? g.a[p * g.lda + i] : g.a[i * g.lda + p]; };                 \
  for (int64_t j0 = 0; j0 < g.n; j0 += W) {                                                                             \
    const int64_t w = std::min<int64_t>(W, g.n - j0);                                                                   \
    int64_t i = 0;                                                                                                      \
    /* Eight rows at a time: eight independent FMA chains keep both FMA pipes busy. */                                  \
    for (; i + 8 <= g.m; i += 8) {                                                                                      \
      float* c = g.c + i * g.ldc + j0;                                                                                  \
      V acc[8];                                                                                                         \
      for (int r = 0; r < 8; ++r) acc[r] = ZERO;                                                                        \
      for (int64_t p = 0; p < g.k; ++p) {                                                                               \
        const V bv = LOAD(b + p * ldb + j0, w);                                                                         \
        for (int r = 0; r < 8; ++r) acc[r] = FMA(SET1(at(i + r, p)), bv, acc[r]);                                       \
      }                                                                                                                 \
      for (int r = 0; r < 8; ++r) STORE(c + r * g.ldc, g.accumulate ? ADD(LOAD(c + r * g.ldc, w), acc[r]) : acc[r], w); \
    }                                                                                                                   \
    for (; i + 4 <= g.m; i += 4) {                                                                                      \
      float* c = g.c + i * g.ldc + j0;                                                                                  \
      V c0 = ZERO, c1 = ZERO, c2 = ZERO, c3 = ZERO;                                                                     \
      for (int64_t p = 0; p < g.k; ++p) {                                                                               \
        const V bv = LOAD(b + p * ldb + j0, w);                                                                         \
        c0 = FMA(SET1(at(i, p)), bv, c0);                                                                               \
        c1 = FMA(SET1(at(i + 1, p)), bv, c1);                                                                           \
        c2 = FMA(SET1(at(i + 2, p)), bv, c2);                                                                           \
        c3 = FMA(SET1(at(i + 3, p)), bv, c3);                                                                           \
      }                                                                                                                 \
      STORE(c, g.accumulate ? ADD(LOAD(c, w), c0) : c0, w);                                                             \
      STORE(c + g.ldc, g.accumulate ? ADD(LOAD(c + g.ldc, w), c1) : c1, w);                                             \
      STORE(c + 2 * g.ldc, g.accumulate ? ADD(LOAD(c + 2 * g.ldc, w), c2) : c2, w);                                     \
      STORE(c + 3 * g.ldc, g.accumulate ? ADD(LOAD(c + 3 * g.ldc, w), c3) : c3, w);                                     \
    }                                                                                                                   \
    for (; i < g.m; ++i) {                                                                                              \
      float* c = g.c + i * g.ldc + j0;                                                                                  \
      V c0 = ZERO;                                                                                                      \
      for (int64_t p = 0; p < g.k; ++p) c0 = FMA(SET1(at(i, p)), LOAD(b + p * ldb + j0, w), c0);                        \
      STORE(c, g.accumulate ? ADD(LOAD(c, w), c0) : c0, w);                                                             \
    }                                                                                                                   \
  }

#define FLOCK_LOAD512(p, w) _mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << (w)) - 1), p)
#define FLOCK_STORE512(p, v, w) _mm512_mask_storeu_ps(p, static_cast<__mmask16>((1u << (w)) - 1), v)
FLOCK_TARGET_AVX512 void small_rows_avx512(const GemmArgs<float>& g, const float* b, int64_t ldb) {
  FLOCK_SMALL_GEMM_BODY(__m512, 16, _mm512_setzero_ps(), FLOCK_LOAD512, FLOCK_STORE512, _mm512_fmadd_ps, _mm512_set1_ps,
                        _mm512_add_ps)
}

#define FLOCK_MASK256(w) _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(w)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7))
#define FLOCK_LOAD256(p, w) ((w) == 8 ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, FLOCK_MASK256(w)))
#define FLOCK_STORE256(p, v, w) ((w) == 8 ? _mm256_storeu_ps(p, v) : _mm256_maskstore_ps(p, FLOCK_MASK256(w), v))
__attribute__((target("avx2,fma"))) void small_rows_avx2(const GemmArgs<float>& g, const float* b, int64_t ldb) {
  FLOCK_SMALL_GEMM_BODY(__m256, 8, _mm256_setzero_ps(), FLOCK_LOAD256, FLOCK_STORE256, _mm256_fmadd_ps, _mm256_set1_ps,
                        _mm256_add_ps)
}
#undef FLOCK_SMALL_GEMM_BODY
#undef FLOCK_LOAD512
#undef FLOCK_STORE512
#undef FLOCK_MASK256
#undef FLOCK_LOAD256
#undef FLOCK_STORE256

template <class T>
void gemm_small(const GemmArgs<T>& g) {
  const T* b = g.b;
  int64_t ldb = g.ldb;
  if (g.tb) {
    thread_local AlignedBuffer<T> bt;
    bt.reserve(static_cast<size_t>(g.k * g.n));
    for (int64_t j = 0; j < g.n; ++j)
      for (int64_t p = 0; p < g.k; ++p) bt.data()[p * g.n + j] = g.b[j * g.ldb + p];
    b = bt.data();
    ldb = g.n;
  }
  if constexpr (std::is_same_v<T, float>) {
    switch (cpu_isa()) {
      case Isa::avx512:
        return small_rows_avx512(g, b, ldb);
      case Isa::avx2:
        return small_rows_avx2(g, b, ldb);
      case Isa::generic:
        break;
    }
  }
  small_rows(g, b, ldb);
}

// One independent serial GEMM per block of the pool split (split_gemm).
template <class T>
void gemm_blocked(const GemmArgs<T>& g, const GemmKernel<T>& kern) {
  const int64_t kMR = kern.mr, kNR = kern.nr;
  if (g.m == 0 || g.n == 0) return;
  if (g.k == 0) {
    if (!g.accumulate)
      for (int64_t i = 0; i < g.m; ++i) std::fill(g.c + i * g.ldc, g.c + i * g.ldc + g.n, T(0));
    return;
  }
  if (g.m * g.n * g.k <= kSmallGemm && g.n <= kSmallGemmMaxN) return gemm_small(g);
  if constexpr (std::is_same_v<T, float>) {
    if (sgemv_rows(g)) return;
  }
  const GemmSplit split = split_gemm(g.m, g.n, g.k, kMR, kNR);
  parallel_for(split.blocks(), 1, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const GemmSplit::Part part = split.part(t);
      const int64_t j0 = part.q0 * kNR, j1 = std::min(g.n, part.q1 * kNR), i0 = part.r0 * kMR, i1 = std::min(g.m, part.r1 * kMR);
      if (j0 >= j1 || i0 >= i1) continue;
      GemmArgs<T> sub = g;
      sub.m = i1 - i0;
      sub.n = j1 - j0;
      sub.a = g.ta ? g.a + i0 : g.a + i0 * g.lda;
      sub.b = g.tb ? g.b + j0 * g.ldb : g.b + j0;
      sub.c = g.c + i0 * g.ldc + j0;
      gemm_serial(sub, kern);
    }
  });
}

}  // namespace

GemmSplit split_gemm(int64_t m, int64_t n, int64_t k, int64_t mr, int64_t nr) {
  GemmSplit s;
  s.panels = (n + nr - 1) / nr;
  s.rows = (m + mr - 1) / mr;
  int64_t threads = m * n * k < (int64_t(1) << 20) ? 1 : num_threads();
  threads = std::min(threads, s.panels * s.rows);
  double best = -1;
  for (int64_t a = 1; a <= threads; ++a) {
    if (threads % a || a > s.panels || threads / a > s.rows) continue;
    const double cost = double(n) / a + double(m) / (threads / a);
    if (best < 0 || cost < best) best = cost, s.tn = a, s.tm = threads / a;
  }
  if (best < 0) s.tn = 1, s.tm = 1;  // no exact factorisation fits: one block
  return s;
}

void sgemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, bool trans_a, const float* b, int64_t ldb, bool trans_b,
           float* c, int64_t ldc, bool accumulate) {
  gemm_blocked<float>({m, n, k, a, lda, trans_a, b, ldb, trans_b, c, ldc, accumulate}, sgemm_kernel());
}

int64_t gemm_k_slice(DType dtype) { return dtype == DType::f64 ? kGenericDgemm.kc : sgemm_kernel().kc; }

void sgemm_serial(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, bool trans_a, const float* b, int64_t ldb,
                  bool trans_b, float* c, int64_t ldc, bool accumulate) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    if (!accumulate)
      for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, 0.0f);
    return;
  }
  gemm_serial<float>({m, n, k, a, lda, trans_a, b, ldb, trans_b, c, ldc, accumulate}, sgemm_kernel());
}

void dgemm(int64_t m, int64_t n, int64_t k, const double* a, int64_t lda, bool trans_a, const double* b, int64_t ldb,
           bool trans_b, double* c, int64_t ldc, bool accumulate) {
  gemm_blocked<double>({m, n, k, a, lda, trans_a, b, ldb, trans_b, c, ldc, accumulate}, kGenericDgemm);
}

const char* sgemm_isa() { return sgemm_kernel().isa; }

namespace {

void matmul_cpu(const Tensor& a, const Tensor& b, Tensor& out, const MatmulPlan& p) {
  const int64_t lda = p.trans_a ? p.m : p.k, ldb = p.trans_b ? p.k : p.n;
  const int64_t batch = static_cast<int64_t>(p.a_offsets.size());
  if (p.accumulate && !p.round_bf16 && a.dtype != DType::f32 && a.dtype != DType::f64)
    fail(Code::Internal, "matmul: accumulating into ", dtype_name(out.dtype), " is not supported");
  if (p.round_bf16) {
    if (!bf16_gemm_available()) fail(Code::Internal, "matmul: rounding to bf16 in the GEMM needs AVX512_BF16");
    const auto operand = [](const Tensor& t, int64_t offset, int64_t ld, bool trans) {
      const bool f32 = t.dtype == DType::f32;
      const void* p0 =
          f32 ? static_cast<const void*>(t.data<float>() + offset) : static_cast<const void*>(t.data<bf16>() + offset);
      return Bf16Operand{p0, ld, trans, f32};
    };
    const bool c_f32 = out.dtype == DType::f32;
    for (int64_t i = 0; i < batch; ++i) {
      void* c =
          c_f32 ? static_cast<void*>(out.data<float>() + i * p.m * p.n) : static_cast<void*>(out.data<bf16>() + i * p.m * p.n);
      bf16_gemm_rounding(p.m, p.n, p.k, operand(a, p.a_offsets[i], lda, p.trans_a), operand(b, p.b_offsets[i], ldb, p.trans_b), c,
                         p.n, c_f32, p.accumulate);
    }
    return;
  }
  switch (a.dtype) {
    case DType::f32:
      for (int64_t i = 0; i < batch; ++i)
        sgemm(p.m, p.n, p.k, a.data<float>() + p.a_offsets[i], lda, p.trans_a, b.data<float>() + p.b_offsets[i], ldb, p.trans_b,
              out.data<float>() + i * p.m * p.n, p.n, p.accumulate);
      return;
    case DType::f64:
      for (int64_t i = 0; i < batch; ++i)
        dgemm(p.m, p.n, p.k, a.data<double>() + p.a_offsets[i], lda, p.trans_a, b.data<double>() + p.b_offsets[i], ldb, p.trans_b,
              out.data<double>() + i * p.m * p.n, p.n, p.accumulate);
      return;
    case DType::bf16:
      if (bf16_gemm_available()) {
        for (int64_t i = 0; i < batch; ++i)
          bf16_gemm(p.m, p.n, p.k, reinterpret_cast<const uint16_t*>(a.data<bf16>() + p.a_offsets[i]), lda, p.trans_a,
                    reinterpret_cast<const uint16_t*>(b.data<bf16>() + p.b_offsets[i]), ldb, p.trans_b,
                    reinterpret_cast<uint16_t*>(out.data<bf16>() + i * p.m * p.n), p.n);
        return;
      }
      [[fallthrough]];
    case DType::f16: {
      // Half types widen to f32 (exact), multiply with f32 accumulation, and round once at the end.
      visit_float(a.dtype, "matmul", [&](auto tag) {
        using T = typename decltype(tag)::type;
        const int64_t asz = p.m * p.k, bsz = p.k * p.n;
        std::vector<float> fa(static_cast<size_t>(asz)), fb(static_cast<size_t>(bsz)), fc(static_cast<size_t>(p.m * p.n));
        for (int64_t i = 0; i < batch; ++i) {
          const T* ap = a.data<T>() + p.a_offsets[i];
          const T* bp = b.data<T>() + p.b_offsets[i];
          for (int64_t j = 0; j < asz; ++j) fa[j] = static_cast<float>(ap[j]);
          for (int64_t j = 0; j < bsz; ++j) fb[j] = static_cast<float>(bp[j]);
          sgemm(p.m, p.n, p.k, fa.data(), lda, p.trans_a, fb.data(), ldb, p.trans_b, fc.data(), p.n);
          T* cp = out.data<T>() + i * p.m * p.n;
          for (int64_t j = 0; j < p.m * p.n; ++j) cp[j] = T(fc[j]);
        }
      });
      return;
    }
    default:
      fail(Code::DType, "matmul: expected a floating dtype (f32, f64, bf16, f16), got ", dtype_name(a.dtype));
  }
}

}  // namespace

FLOCK_REGISTER_KERNEL(matmul, CPU, matmul_cpu);

}  // namespace flock::cpu
