// Every kernel family of the op table; the op codes they take are generated from the manifest. A device backend (cpu/, cuda/)
// registers one function per family; ops in cpp/ops/ validate, allocate and enqueue them.
#pragma once
#include <cstdint>
#include <vector>
#include "dispatch.h"
#include "generated/op_enums.h"
#include "tensor.h"

namespace flock {

// The op codes (UnaryOp, BinaryOp, ReduceOp, RandomKind, BiasAct) come from the op manifest (npm
// run gen:ops): declared here without members (generated/op_enums.h); a file that names a code
// includes its family's generated/<family>_codes.h, so adding one recompiles only those files.

// Element offsets of each batch entry of a batched matmul (batch broadcasting resolved).
struct MatmulPlan {
  int64_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  // f32 on CUDA may round operands to tf32 for tensor cores; read from the Context when the
  // matmul is queued, so changing the setting later leaves queued work as it was.
  bool allow_tf32 = false;
  // The operands and out are f32 or bf16, multiplied as bf16 (f32 ones rounded as cast() rounds),
  // the result rounded to bf16 once (ops::matmul_lowered; CPU with AVX512_BF16 only).
  bool round_bf16 = false;
  // out += the product instead of out = it (ops::matmul_into; CPU only, out 2-D).
  bool accumulate = false;
  // One per batch entry (out is dense [batch, m, n]); Shape's small-vector storage, so a plan for up
  // to 8 matrices allocates nothing.
  Shape a_offsets, b_offsets;
};

// A strided element-wise copy: dst[dst_offset + Σ i_d·dst_strides_d] = src[src_offset + Σ i_d·src_strides_d].
struct StridedCopy {
  Shape shape;
  std::vector<int64_t> src_strides, dst_strides;
  int64_t src_offset = 0, dst_offset = 0;
};

FLOCK_DECLARE_KERNEL(fill, void(Tensor& out, double value))
FLOCK_DECLARE_KERNEL(cast, void(const Tensor& src, Tensor& out))
FLOCK_DECLARE_KERNEL(arange, void(Tensor& out, double start, double step))
FLOCK_DECLARE_KERNEL(unary, void(UnaryOp op, const Tensor& x, Tensor& out, double a, double b))
FLOCK_DECLARE_KERNEL(unary_backward, void(UnaryOp op, const Tensor& x, const Tensor& gy, Tensor& gx, double a, double b))
FLOCK_DECLARE_KERNEL(binary, void(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out))
FLOCK_DECLARE_KERNEL(where, void(const Tensor& cond, const Tensor& a, const Tensor& b, Tensor& out))
FLOCK_DECLARE_KERNEL(reduce, void(ReduceOp op, const Tensor& x, Tensor& out, int64_t outer, int64_t red, int64_t inner,
                                  double correction))
FLOCK_DECLARE_KERNEL(matmul, void(const Tensor& a, const Tensor& b, Tensor& out, const MatmulPlan& plan))
FLOCK_DECLARE_KERNEL(softmax, void(const Tensor& x, Tensor& out, int64_t outer, int64_t dim, int64_t inner, bool log))
FLOCK_DECLARE_KERNEL(strided_copy, void(const Tensor& src, Tensor& dst, const StridedCopy& plan))
FLOCK_DECLARE_KERNEL(index_select,
                     void(const Tensor& x, const Tensor& index, Tensor& out, int64_t outer, int64_t dim_size, int64_t inner))
FLOCK_DECLARE_KERNEL(gather, void(const Tensor& x, const Tensor& index, Tensor& out, int64_t dim))
FLOCK_DECLARE_KERNEL(scatter_add, void(Tensor& out, const Tensor& index, const Tensor& src, int64_t dim))
// out (i64, [...index.shape, num_classes]) = 1 where the last coordinate is the class index, else 0.
FLOCK_DECLARE_KERNEL(one_hot, void(const Tensor& index, Tensor& out, int64_t num_classes))
// Host transfers: `host` is ordinary (pageable) memory owned by the caller until the work has run.
FLOCK_DECLARE_KERNEL(copy_to_host, void(const Tensor& src, void* host))
FLOCK_DECLARE_KERNEL(copy_from_host, void(const void* host, Tensor& dst))
// Copies between a CPU tensor and a CUDA tensor, or between CUDA devices; registered by the GPU
// backend on the GPU side's device type.
FLOCK_DECLARE_KERNEL(transfer, void(const Tensor& src, Tensor& dst))
FLOCK_DECLARE_KERNEL(random, void(RandomKind kind, Tensor& out, uint64_t seed, uint64_t offset, double a, double b))

// Scan, sort, scatter, select and sample families (cumsum ... multinomial). Rows are the middle
// dim of a contiguous [outer, n, inner] view unless said otherwise.
// Cumulative sum (prod false) or product along n, from the end when `reverse`; out has x's dtype.
FLOCK_DECLARE_KERNEL(scan, void(const Tensor& x, Tensor& out, int64_t outer, int64_t n, int64_t inner, bool prod, bool reverse))
// The gradient of cumprod, exact where x has zeros (as torch's cumprod_backward).
FLOCK_DECLARE_KERNEL(cumprod_backward,
                     void(const Tensor& x, const Tensor& gy, Tensor& gx, int64_t outer, int64_t n, int64_t inner))
// Stable sort of each of `rows` contiguous rows of n: values (x's dtype) and indices (i64). NaN
// sorts above +inf and -0 equals +0, as torch.sort.
FLOCK_DECLARE_KERNEL(sort, void(const Tensor& x, Tensor& values, Tensor& indices, int64_t rows, int64_t n, bool descending))
// out[... index[e] ...] = src[e] along `dim` (gather's addressing).
FLOCK_DECLARE_KERNEL(scatter, void(Tensor& out, const Tensor& index, const Tensor& src, int64_t dim))
enum class ScatterReduceOp : int { sum, prod, mean, amax, amin, count };
// out already holds the input; `count` (i64, out's shape) is scratch that mean uses.
FLOCK_DECLARE_KERNEL(scatter_reduce, void(ScatterReduceOp op, Tensor& out, const Tensor& index, const Tensor& src, int64_t dim,
                                          bool include_self, Tensor& count))
// positions: i64 inclusive running count of mask (same numel as x and mask); out holds the picks.
FLOCK_DECLARE_KERNEL(masked_select, void(const Tensor& x, const Tensor& mask, const Tensor& positions, Tensor& out))
// out [count, ndim] i64: the coordinates of mask's true elements in row-major order.
FLOCK_DECLARE_KERNEL(nonzero, void(const Tensor& mask, const Tensor& positions, Tensor& out))
// Draws with replacement from each row of probs [rows, c] into out [rows, num_samples] (i64).
FLOCK_DECLARE_KERNEL(multinomial, void(const Tensor& probs, Tensor& out, int64_t num_samples, uint64_t seed, uint64_t offset))
// keys (f64, probs' shape) = log(u) / p for Philox uniforms u: the top num_samples keys of a row
// are a draw without replacement (zero probabilities give -inf, never picked first).
FLOCK_DECLARE_KERNEL(multinomial_keys, void(const Tensor& probs, Tensor& keys, uint64_t seed, uint64_t offset))
// Throws (on the stream, so the next sync point rejects) unless every weight of probs [rows, c] is
// finite and non-negative, every row sums above 0 and, without replacement, has num_samples non-zero
// weights. Devices without it are checked by the front end with a read back.
FLOCK_DECLARE_KERNEL(multinomial_check, void(const Tensor& probs, int64_t num_samples, bool replacement))

}  // namespace flock
