// bf16 <-> f32 conversion loops for the CPU kernels, bit for bit the bf16 type's (dtype.h):
// widening is a 16-bit shift; narrowing rounds to nearest even and quiets a NaN (bits | 0x40).
// Written branch-free on the bits and always inlined, so each instruction set's copy of a
// FLOCK_ISA_PARALLEL_FOR body vectorises them at its width. bf16_narrow_cvtne does the narrowing
// with AVX512_BF16's VCVTNEPS2BF16 (only where cpu_bf16_convert() says so).
#pragma once
#include <cstdint>
#include <cstring>
#include "../dtype.h"

namespace flock::cpu {

#define FLOCK_BF16_INLINE inline __attribute__((always_inline))

FLOCK_BF16_INLINE uint16_t bf16_round_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const uint32_t quiet = (u >> 16) | 0x40u;
  return static_cast<uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? quiet : rounded);
}

FLOCK_BF16_INLINE void bf16_widen(const bf16* src, float* dst, int64_t n) {
  const uint16_t* s = reinterpret_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t u = static_cast<uint32_t>(s[i]) << 16;
    std::memcpy(dst + i, &u, 4);
  }
}

FLOCK_BF16_INLINE void bf16_narrow(const float* src, bf16* dst, int64_t n) {
  uint16_t* d = reinterpret_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) d[i] = bf16_round_bits(src[i]);
}

// VCVTNEPS2BF16 rounds to nearest even and quiets NaN as bf16_narrow does, but flushes f32
// subnormals to zero: blocks holding one are rounded again on the bits. Needs AVX512_BF16.
void bf16_narrow_cvtne(const float* src, bf16* dst, int64_t n);
// dst[i] = bf16(src[i] + add), the same way (the bf16 GEMM's and convolution's f32 tiles and bias).
void bf16_narrow_add_cvtne(const float* src, float add, bf16* dst, int64_t n);

// dst[i] = f32(bf16(src[i])): each value rounded to bf16 and kept in f32 (the bf16 GEMM's f32
// results), bit for bit bf16_narrow then bf16_widen. Needs AVX-512F.
void bf16_round_f32(const float* src, float* dst, int64_t n);

// bf16_narrow, or bf16_narrow_cvtne when `cvtne` (cpu_bf16_convert(), read once by the caller).
FLOCK_BF16_INLINE void bf16_store(const float* src, bf16* dst, int64_t n, bool cvtne) {
  if (cvtne)
    bf16_narrow_cvtne(src, dst, n);
  else
    bf16_narrow(src, dst, n);
}

}  // namespace flock::cpu
