// What the blocked GEMM driver (cpp/cpu/gemm.cc) needs from an instruction set: a register-blocked
// micro-kernel for one MR×NR tile of C and the cache blocking that suits it. One per ISA, chosen
// at run time (isa.h); the AVX-512 one is in gemm_avx512.cc, compiled for that target only.
#pragma once
#include <cstdint>

namespace flock::cpu {

// C[MR×NR] (row stride ldc) (+)= Σ_p a[p·MR + i] · b[p·NR + j] over kc steps, from packed panels
// (b 64-byte aligned); accumulate adds to C instead of overwriting it.
template <class T>
using MicroKernel = void (*)(int64_t kc, const T* a, const T* b, T* c, int64_t ldc, bool accumulate);

template <class T>
struct GemmKernel {
  MicroKernel<T> micro;
  int64_t mr, nr;      // register tile
  int64_t kc, mc, nc;  // K slice (L1/L2), rows of A packed at a time (L2), columns of B packed at a time (L3)
  const char* isa;
};

// One product of the driver: C[m, n] (ldc) (+)= op(A) · op(B), laid out as sgemm's (gemm.h).
template <class T>
struct GemmArgs {
  int64_t m, n, k;
  const T* a;
  int64_t lda;
  bool ta;
  const T* b;
  int64_t ldb;
  bool tb;
  T* c;
  int64_t ldc;
  bool accumulate;  // C += op(A)·op(B) instead of C = op(A)·op(B)
};

// A C of at most this many rows is computed without packing, where AVX2 is there: sgemv_rows
// (cpp/cpu/gemv.cc) does the product and returns true, or returns false and leaves it to the
// packed GEMM. C gets each finished sum (added to it with `accumulate`), whatever K is.
constexpr int64_t kGemvMaxRows = 4;
bool sgemv_rows(const GemmArgs<float>& g);

// Largest tile any kernel uses (edge tiles are computed in a buffer of this size).
constexpr int64_t kMaxMR = 16, kMaxNR = 32;

GemmKernel<float> sgemm_avx512_kernel();

// How a GEMM's C is cut over the pool: tn ranges of its `panels` column panels × tm ranges of its
// `rows` row blocks, one independent serial GEMM per block, so no call has a barrier inside and each
// thread packs only the A rows and B panels its block reads. The split minimises a block's rows +
// columns (what its thread packs). Under 2^20 multiply-adds, or inside a pool task, it is one block.
struct GemmSplit {
  int64_t tn = 1, tm = 1, panels = 0, rows = 0;
  int64_t blocks() const { return tn * tm; }
  // Block t: panels [q0, q1) and row blocks [r0, r1).
  struct Part {
    int64_t q0, q1, r0, r1;
  };
  Part part(int64_t t) const {
    const int64_t tq = t % tn, tr = t / tn;
    return {panels * tq / tn, panels * (tq + 1) / tn, rows * tr / tm, rows * (tr + 1) / tm};
  }
};
GemmSplit split_gemm(int64_t m, int64_t n, int64_t k, int64_t mr, int64_t nr);

}  // namespace flock::cpu
