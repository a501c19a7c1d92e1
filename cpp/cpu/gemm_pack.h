// The transposing half of GEMM packing: panel lanes gathered from consecutive rows of a matrix
// (op(A) = A's MR-row panels, and op(B) = Bᵀ's NR-column panels). Done one element at a time these
// strided writes cost a sixth of a 256³ GEMM's time; 8×8 register transposes make them a few percent.
#pragma once
#include <cstdint>

namespace flock::cpu {

// d[p·dstride + r] = (r < rows ? src[r·ld + p] : 0) for r < width, p < kc; 0 ≤ rows ≤ width ≤ 8.
// AVX2 8×8 transposes where cpu_isa() is avx2 or wider, a scalar loop otherwise: the same values.
void pack_transposed(const float* src, int64_t ld, int64_t rows, int64_t width, int64_t kc, float* d, int64_t dstride);
// The same on 32-bit words (a pair of bf16 along K each, for the bf16 GEMM), moved as bits.
void pack_transposed(const uint32_t* src, int64_t ld, int64_t rows, int64_t width, int64_t kc, uint32_t* d, int64_t dstride);

}  // namespace flock::cpu
