// The CPU GEMM: C = op(A) · op(B), row-major, with op = transpose or not read from the strides of
// the packing routines, so transposed operands never need a copy.
#pragma once
#include <cstdint>
#include <functional>
#include "../dtype.h"

namespace flock::cpu {

// C[m, n] (ldc) = Σ_k A(i, k) · B(k, j). A(i, k) = a[i*lda + k], or a[k*lda + i] when trans_a;
// B(k, j) = b[k*ldb + j], or b[j*ldb + k] when trans_b.
// With `accumulate`, C += the product: each K slice's sums are added to C as the slice ends, so for
// K ≤ gemm_k_slice(dtype) the result is that of adding the finished product to C.
void sgemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, bool trans_a, const float* b, int64_t ldb, bool trans_b,
           float* c, int64_t ldc, bool accumulate = false);
void dgemm(int64_t m, int64_t n, int64_t k, const double* a, int64_t lda, bool trans_a, const double* b, int64_t ldb,
           bool trans_b, double* c, int64_t ldc, bool accumulate = false);
// The K slice of sgemm (f32) and dgemm (f64).
int64_t gemm_k_slice(DType dtype);

// sgemm on the calling thread only, adding to C when `accumulate`: for callers that split work
// over the pool themselves (convolution, image by image).
void sgemm_serial(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, bool trans_a, const float* b, int64_t ldb,
                  bool trans_b, float* c, int64_t ldc, bool accumulate);

// The instruction set of the f32 micro-kernel in use ("avx512", "avx2", "generic"; see isa.h).
const char* sgemm_isa();

// bf16 × bf16 → bf16 with f32 accumulation on AVX512_BF16 (cpp/cpu/gemm_bf16.cc); operands and C
// as raw bf16 bits, laid out as sgemm's. Only call it when bf16_gemm_available().
bool bf16_gemm_available();
void bf16_gemm(int64_t m, int64_t n, int64_t k, const uint16_t* a, int64_t lda, bool trans_a, const uint16_t* b, int64_t ldb,
               bool trans_b, uint16_t* c, int64_t ldc);
// An operand of bf16_gemm_rounding: raw bf16 bits, or f32 values (`f32`) rounded to bf16 as cast()
// rounds them when they are packed, laid out as sgemm's.
struct Bf16Operand {
  const void* p;
  int64_t ld;
  bool trans;
  bool f32;
};
// C = op(A)·op(B) as if each f32 operand were first cast to bf16: f32 accumulation, C rounded to bf16
// once, and stored as bf16, or (`c_f32`) widened back to f32 as casting the bf16 result would. The
// autocast linear's product and gradients, with no cast tensors.
// With `accumulate` (c_f32 only), the widened result is added to C.
void bf16_gemm_rounding(int64_t m, int64_t n, int64_t k, const Bf16Operand& a, const Bf16Operand& b, void* c, int64_t ldc,
                        bool c_f32, bool accumulate = false);
// bf16 × bf16 with C in f32 (written, or added to when `accumulate`), for callers that go on summing.
void bf16_gemm_f32(int64_t m, int64_t n, int64_t k, const uint16_t* a, int64_t lda, bool trans_a, const uint16_t* b, int64_t ldb,
                   bool trans_b, float* c, int64_t ldc, bool accumulate);
// The same handing C over in f32 tiles: store(i0, j0, rows, cols, tile) gets C[i0 + i, j0 + j] at
// tile[i · kBf16TileCols + j] for i < rows ≤ 8, j < cols ≤ kBf16TileCols, each element once.
constexpr int64_t kBf16TileCols = 32;
using Bf16TileStore = std::function<void(int64_t i0, int64_t j0, int64_t rows, int64_t cols, const float* tile)>;
void bf16_gemm_tiles(int64_t m, int64_t n, int64_t k, const uint16_t* a, int64_t lda, bool trans_a, const uint16_t* b,
                     int64_t ldb, bool trans_b, const Bf16TileStore& store);

}  // namespace flock::cpu
