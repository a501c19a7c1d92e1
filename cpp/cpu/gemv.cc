// f32 products whose C has a few rows (a decoding step's batch-1 linear layers, [1, 384] × [384,
// 1152]): the packed GEMM would copy all of op(B) to read it once and fill one row of a six-row
// tile, so here each pool task streams its columns of op(B) straight from memory, once for all the
// rows of C. op(B) = Bᵀ (a linear layer's weight) is a dot product of contiguous rows; op(B) = B a
// sum of B's rows scaled by A's entries.
#include "gemm_kernel.h"
#include "isa.h"
#include "threadpool.h"
#include <immintrin.h>
#include <algorithm>
#include <vector>

namespace flock::cpu {
namespace {

// The rows of op(A) gathered contiguous (row i at a[i * k]), and the rest of the product.
struct Rows {
  int64_t m, n, k;
  const float* a;
  const float* b;
  int64_t ldb;
  float* c;
  int64_t ldc;
  bool accumulate;
};

// A pool task's share: at least this many multiply-adds, so that small products stay on one thread.
constexpr int64_t kTaskWork = int64_t(1) << 16;

__attribute__((target("avx2,fma"))) inline __m256i lanes_below(int64_t w) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(w)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

__attribute__((target("avx2,fma"))) inline float lane_sum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// The 8 floats at p[at], or those below k (the lanes of `tail`) where at is k8, the last full vector's end.
__attribute__((target("avx2,fma"))) inline __m256 load(const float* p, int64_t at, int64_t k8, __m256i tail) {
  return at < k8 ? _mm256_loadu_ps(p + at) : _mm256_maskload_ps(p + at, tail);
}

inline void put(const Rows& g, int64_t i, int64_t j, float v) {
  float& c = g.c[i * g.ldc + j];
  c = g.accumulate ? c + v : v;
}

// op(B) = Bᵀ, columns [j0, j1): C[i, j] = Σ_p a[i, p] · b[j, p]. Four rows of B at a time, so each
// load of A feeds four multiply-adds; two partial sums per row of B keep eight FMA chains in flight.
__attribute__((target("avx2,fma"))) void dot_columns(const Rows& g, int64_t j0, int64_t j1) {
  const int64_t k16 = g.k & ~int64_t(15), k8 = g.k & ~int64_t(7);
  const __m256i tail = lanes_below(g.k - k8);
  int64_t j = j0;
  for (; j + 4 <= j1; j += 4) {
    const float* b[4] = {g.b + j * g.ldb, g.b + (j + 1) * g.ldb, g.b + (j + 2) * g.ldb, g.b + (j + 3) * g.ldb};
    for (int64_t i = 0; i < g.m; ++i) {
      const float* a = g.a + i * g.k;
      __m256 s[4][2];
      for (auto& r : s) r[0] = r[1] = _mm256_setzero_ps();
      int64_t p = 0;
      for (; p < k16; p += 16) {
        const __m256 a0 = _mm256_loadu_ps(a + p), a1 = _mm256_loadu_ps(a + p + 8);
        for (int q = 0; q < 4; ++q) {
          s[q][0] = _mm256_fmadd_ps(a0, _mm256_loadu_ps(b[q] + p), s[q][0]);
          s[q][1] = _mm256_fmadd_ps(a1, _mm256_loadu_ps(b[q] + p + 8), s[q][1]);
        }
      }
      for (; p < g.k; p += 8) {
        const __m256 av = load(a, p, k8, tail);
        for (int q = 0; q < 4; ++q) s[q][0] = _mm256_fmadd_ps(av, load(b[q], p, k8, tail), s[q][0]);
      }
      for (int q = 0; q < 4; ++q) put(g, i, j + q, lane_sum(_mm256_add_ps(s[q][0], s[q][1])));
    }
  }
  for (; j < j1; ++j) {
    const float* b = g.b + j * g.ldb;
    for (int64_t i = 0; i < g.m; ++i) {
      const float* a = g.a + i * g.k;
      __m256 s = _mm256_setzero_ps();
      for (int64_t p = 0; p < g.k; p += 8) s = _mm256_fmadd_ps(load(a, p, k8, tail), load(b, p, k8, tail), s);
      put(g, i, j, lane_sum(s));
    }
  }
}

// op(B) = B, columns [j0, j1) (16 at a time, two vectors): C[i, j] = Σ_p a[i, p] · b[p, j], every
// row of C (M of them) summed in registers as B's rows stream by.
template <int M>
__attribute__((target("avx2,fma"))) void row_sums(const Rows& g, int64_t j0, int64_t j1) {
  for (int64_t j = j0; j < j1; j += 16) {
    const int64_t w = std::min<int64_t>(16, j1 - j);
    const __m256i m0 = lanes_below(w), m1 = lanes_below(w - 8);
    __m256 s[M][2];
    for (auto& r : s) r[0] = r[1] = _mm256_setzero_ps();
    for (int64_t p = 0; p < g.k; ++p) {
      const float* bp = g.b + p * g.ldb + j;
      const __m256 b0 = w >= 8 ? _mm256_loadu_ps(bp) : _mm256_maskload_ps(bp, m0);
      const __m256 b1 = w >= 16 ? _mm256_loadu_ps(bp + 8) : _mm256_maskload_ps(bp + 8, m1);
      for (int i = 0; i < M; ++i) {
        const __m256 av = _mm256_set1_ps(g.a[i * g.k + p]);
        s[i][0] = _mm256_fmadd_ps(av, b0, s[i][0]);
        s[i][1] = _mm256_fmadd_ps(av, b1, s[i][1]);
      }
    }
    for (int i = 0; i < M; ++i) {
      alignas(32) float out[16];
      _mm256_store_ps(out, s[i][0]);
      _mm256_store_ps(out + 8, s[i][1]);
      for (int64_t q = 0; q < w; ++q) put(g, i, j + q, out[q]);
    }
  }
}

}  // namespace

bool sgemv_rows(const GemmArgs<float>& g) {
  if (g.m > kGemvMaxRows || cpu_isa() == Isa::generic) return false;
  // op(A)'s rows, contiguous: a transposed A is read down its columns once here.
  thread_local std::vector<float> gathered;
  const float* a = g.a;
  if (g.ta || g.lda != g.k) {
    gathered.resize(static_cast<size_t>(g.m * g.k));
    for (int64_t i = 0; i < g.m; ++i)
      for (int64_t p = 0; p < g.k; ++p) gathered[i * g.k + p] = g.ta ? g.a[p * g.lda + i] : g.a[i * g.lda + p];
    a = gathered.data();
  }
  const Rows rows{g.m, g.n, g.k, a, g.b, g.ldb, g.c, g.ldc, g.accumulate};
  if (g.tb) {
    // Tasks of whole groups of four columns.
    const int64_t groups = (g.n + 3) / 4, grain = std::max<int64_t>(1, kTaskWork / (4 * g.k * g.m));
    parallel_for(groups, grain, [&](int64_t q0, int64_t q1) { dot_columns(rows, q0 * 4, std::min(g.n, q1 * 4)); });
    return true;
  }
  using Kernel = void (*)(const Rows&, int64_t, int64_t);
  static constexpr Kernel kernels[kGemvMaxRows] = {row_sums<1>, row_sums<2>, row_sums<3>, row_sums<4>};
  const Kernel kernel = kernels[g.m - 1];
  const int64_t blocks = (g.n + 15) / 16, grain = std::max<int64_t>(1, kTaskWork / (16 * g.k * g.m));
  parallel_for(blocks, grain, [&](int64_t q0, int64_t q1) { kernel(rows, q0 * 16, std::min(g.n, q1 * 16)); });
  return true;
}

}  // namespace flock::cpu
