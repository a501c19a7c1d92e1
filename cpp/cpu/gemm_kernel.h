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
  int64_t mr, nr;  // register tile
  int64_t kc, mc, nc;  // K slice (L1/L2), rows of A packed at a time (L2), columns of B packed at a time (L3)
  const char* isa;
};

// Largest tile any kernel uses (edge tiles are computed in a buffer of this size).
constexpr int64_t kMaxMR = 16, kMaxNR = 32;

GemmKernel<float> sgemm_avx512_kernel();

}  // namespace flock::cpu
