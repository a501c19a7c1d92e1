// The matmul front end: op(a) · op(b) over broadcast batch dims, and the same computed as if f32
// operands were first cast to a low dtype (the autocast linear's product and gradients).
#include "../context.h"
#include "../cpu/gemm.h"
#include "ops.h"

namespace flock::ops {
namespace {

// The plan of op(a) · op(b) and the output's shape; checks the shapes, not the dtypes.
MatmulPlan plan(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b, Shape& out_shape) {
  if (a.dim() < 2 || b.dim() < 2)
    fail(Code::Shape, "matmul: operands need at least 2 dims here, got ", shape_str(a.shape), " and ", shape_str(b.shape));
  MatmulPlan p;
  p.trans_a = trans_a;
  p.trans_b = trans_b;
  const int64_t ar = a.shape[a.dim() - 2], ac = a.shape[a.dim() - 1];
  const int64_t br = b.shape[b.dim() - 2], bc = b.shape[b.dim() - 1];
  p.m = trans_a ? ac : ar;
  p.k = trans_a ? ar : ac;
  const int64_t kb = trans_b ? bc : br;
  p.n = trans_b ? br : bc;
  if (p.k != kb)
    fail(Code::Shape, "matmul: inner dimensions differ: ", shape_str(a.shape), (trans_a ? "ᵀ" : ""), " @ ", shape_str(b.shape),
         (trans_b ? "ᵀ" : ""), " (", p.k, " vs ", kb, ")");
  Shape ab(a.shape.begin(), a.shape.end() - 2), bb(b.shape.begin(), b.shape.end() - 2);
  const Shape batch = broadcast_shapes(ab, bb, "matmul");
  out_shape = batch;
  out_shape.push_back(p.m);
  out_shape.push_back(p.n);
  int64_t nb = 1;
  for (int64_t s : batch) nb *= s;
  // Offsets of each batch entry in a and b, broadcasting size-1 batch dims.
  auto offsets = [&](const Shape& own, int64_t mat) {
    Shape st(batch.size(), 0);
    int64_t s = mat;
    for (int64_t i = static_cast<int64_t>(own.size()) - 1, j = static_cast<int64_t>(batch.size()) - 1; i >= 0; --i, --j) {
      st[j] = own[i] == 1 ? 0 : s;
      s *= own[i];
    }
    Shape offs(static_cast<size_t>(nb));
    for (int64_t e = 0; e < nb; ++e) {
      int64_t rem = e, off = 0;
      for (int64_t d = static_cast<int64_t>(batch.size()) - 1; d >= 0; --d) {
        off += (rem % batch[d]) * st[d];
        rem /= batch[d];
      }
      offs[e] = off;
    }
    return offs;
  };
  p.a_offsets = offsets(ab, ar * ac);
  p.b_offsets = offsets(bb, br * bc);
  return p;
}

Tensor run(const Tensor& a, const Tensor& b, MatmulPlan p, const Shape& out_shape, DType out_dtype) {
  Tensor out = empty(out_shape, out_dtype, a.device(), "matmul");
  const int64_t work = static_cast<int64_t>(p.a_offsets.size()) * p.m * p.n * p.k;
  if (out.numel() == 0) return out;
  auto kernel = matmul_table().get(a.device());
  enqueue(
      "matmul", a.device(), [a, b, out, p = std::move(p), kernel]() mutable { kernel(a, b, out, p); }, work / 8);
  return out;
}

// A plain product's dtypes: one floating dtype for both operands.
void check_plain_dtypes(const Tensor& a, const Tensor& b) {
  if (a.dtype != b.dtype) fail(Code::DType, "matmul: dtypes ", dtype_name(a.dtype), " and ", dtype_name(b.dtype), " differ");
  if (!is_floating(a.dtype)) fail(Code::DType, "matmul: expected a floating dtype, got ", dtype_name(a.dtype));
}

// A lowered product's dtypes: computing in bf16 or f16, operands and result in it or in f32.
void check_lowered_dtypes(DType compute, DType a, DType b, DType out) {
  if (compute != DType::bf16 && compute != DType::f16)
    fail(Code::DType, "matmul: the compute dtype must be bf16 or f16, got ", dtype_name(compute));
  for (const DType d : {a, b, out})
    if (d != compute && d != DType::f32)
      fail(Code::DType, "matmul: computing in ", dtype_name(compute), ", operands and result must be ", dtype_name(compute),
           " or f32, got ", dtype_name(a), " @ ", dtype_name(b), " -> ", dtype_name(out));
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b) {
  check_same_device(a, b, "matmul");
  check_plain_dtypes(a, b);
  Shape out_shape;
  MatmulPlan p = plan(a, b, trans_a, trans_b, out_shape);
  p.allow_tf32 = Context::current().allow_tf32.load();
  return run(a, b, std::move(p), out_shape, a.dtype);
}

Tensor matmul_lowered(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b, DType compute, DType out_dtype) {
  check_same_device(a, b, "matmul");
  check_lowered_dtypes(compute, a.dtype, b.dtype, out_dtype);
  Shape out_shape;
  MatmulPlan p = plan(a, b, trans_a, trans_b, out_shape);
  if (compute == DType::bf16 && a.device().is_cpu() && cpu::bf16_gemm_available()) {
    p.round_bf16 = true;
    return run(a, b, std::move(p), out_shape, out_dtype);
  }
  // Elsewhere the casts run as kernels of their own: the same values.
  const Tensor la = a.dtype == compute ? a : cast(a, compute), lb = b.dtype == compute ? b : cast(b, compute);
  const Tensor c = matmul(la, lb, trans_a, trans_b);
  return out_dtype == compute ? c : cast(c, out_dtype);
}

bool matmul_into(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b, const DType* compute, Tensor& out) {
  check_same_device(a, b, "matmul");
  check_same_device(a, out, "matmul");
  if (a.dim() != 2 || b.dim() != 2 || out.dim() != 2)
    fail(Code::Shape, "matmul: accumulating needs 2-D operands and out, got ", shape_str(a.shape), " @ ", shape_str(b.shape),
         " into ", shape_str(out.shape));
  Shape out_shape;
  MatmulPlan p = plan(a, b, trans_a, trans_b, out_shape);
  if (out.shape != out_shape)
    fail(Code::Shape, "matmul: the product ", shape_str(out_shape), " cannot be added into ", shape_str(out.shape));
  if (compute == nullptr) {
    check_plain_dtypes(a, b);
    if (out.dtype != a.dtype)
      fail(Code::DType, "matmul: a product of ", dtype_name(a.dtype), " cannot be added into ", dtype_name(out.dtype));
  } else {
    check_lowered_dtypes(*compute, a.dtype, b.dtype, out.dtype);
  }
  if (!out.device().is_cpu() || out.storage == a.storage || out.storage == b.storage) return false;
  if (compute != nullptr) {
    // The rounding GEMM sums all of K before it rounds and adds: f32 out only.
    if (*compute != DType::bf16 || out.dtype != DType::f32 || !cpu::bf16_gemm_available()) return false;
    p.round_bf16 = true;
  } else if (a.dtype == DType::f32 || a.dtype == DType::f64) {
    // The blocked GEMM adds each K slice to C as it goes: one slice, or the sums would round apart.
    if (p.k > cpu::gemm_k_slice(a.dtype)) return false;
  } else {
    return false;
  }
  p.accumulate = true;
  if (out.numel() == 0) return true;
  const int64_t work = p.m * p.n * p.k;
  auto kernel = matmul_table().get(a.device());
  enqueue(
      "matmul", a.device(), [a, b, out, p = std::move(p), kernel]() mutable { kernel(a, b, out, p); }, work / 8);
  return true;
}

}  // namespace flock::ops
