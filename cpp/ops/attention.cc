// Front end of fused scaled dot-product attention: checks the 3-D views the TypeScript layer
// passes (leading dims already folded into one batch axis) and the mask's broadcast geometry,
// allocates the outputs and enqueues the kernels.
#include <cmath>
#include "../nn_kernels.h"
#include "ops.h"

namespace flock::ops {
namespace {

bool is_float(DType t) { return t == DType::f32 || t == DType::f64 || t == DType::bf16 || t == DType::f16; }

void check_like(const Tensor& t, const Tensor& q, const char* op, const char* name) {
  check_same_device(t, q, op);
  if (t.dtype != q.dtype) fail(Code::DType, op, ": ", name, " is ", dtype_name(t.dtype), ", query is ", dtype_name(q.dtype));
  if (t.dim() != 3) fail(Code::Shape, op, ": ", name, " must be 3-D [batch, seq, dim], got ", shape_str(t.shape));
}

void mask_geometry(const Tensor& q, const Tensor* mask, AttnGeom& g, const char* op);

// Fills the shape part of `g` from q, k, v (and the mask's) and checks them.
void attn_geometry(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask, AttnGeom& g, const char* op) {
  if (!is_float(q.dtype))
    fail(Code::DType, op, ": query must be a floating tensor (f32, f64, bf16, f16), got ", dtype_name(q.dtype));
  if (q.dim() != 3) fail(Code::Shape, op, ": query must be 3-D [batch, seq, dim], got ", shape_str(q.shape));
  check_like(k, q, op, "key");
  check_like(v, q, op, "value");
  if (k.shape[0] != q.shape[0] || v.shape[0] != q.shape[0] || k.shape[2] != q.shape[2] || v.shape[1] != k.shape[1])
    fail(Code::Shape, op, ": query ", shape_str(q.shape), ", key ", shape_str(k.shape), " and value ", shape_str(v.shape),
         " must be [b, tq, d], [b, tk, d] and [b, tk, dv]");
  g.bh = q.shape[0];
  g.tq = q.shape[1];
  g.tk = k.shape[1];
  g.d = q.shape[2];
  g.dv = v.shape[2];
  mask_geometry(q, mask, g, op);
}

// Checks scale, dropout and the mask against the shape part of `g`, and fills the mask part.
void mask_geometry(const Tensor& q, const Tensor* mask, AttnGeom& g, const char* op) {
  if (!(g.scale == g.scale) || std::isinf(g.scale)) fail(Code::Range, op, ": scale must be finite, got ", g.scale);
  if (!(g.dropout_p >= 0 && g.dropout_p <= 1)) fail(Code::Range, op, ": dropoutP must be in [0, 1], got ", g.dropout_p);
  if (!mask) {
    g.mask_kind = 0;
    g.mask_div = g.mask_mod = 1;
    g.mask_batch = g.mask_sq = g.mask_sk = 0;
    return;
  }
  check_same_device(*mask, q, op);
  if (mask->dtype == DType::boolean)
    g.mask_kind = 1;
  else if (mask->dtype == q.dtype)
    g.mask_kind = 2;
  else
    fail(Code::DType, op, ": attnMask must be bool or the query's dtype ", dtype_name(q.dtype), ", got ",
         dtype_name(mask->dtype));
  if (mask->dim() != 3) fail(Code::Shape, op, ": attnMask must be 3-D here, got ", shape_str(mask->shape));
  const int64_t mb = mask->shape[0], mq = mask->shape[1], mk = mask->shape[2];
  if ((mq != 1 && mq != g.tq) || (mk != 1 && mk != g.tk))
    fail(Code::Shape, op, ": attnMask ", shape_str(mask->shape), " does not broadcast to [", g.tq, ", ", g.tk, "]");
  if (g.mask_div < 1 || g.mask_mod != mb || mb < 1 || g.bh % (g.mask_div * g.mask_mod) != 0)
    fail(Code::Shape, op, ": attnMask batch ", mb, " with divisor ", g.mask_div, " and period ", g.mask_mod,
         " does not fit batch ", g.bh);
  g.mask_batch = mq * mk;
  g.mask_sq = mq == 1 ? 0 : mk;
  g.mask_sk = mk == 1 ? 0 : 1;
}

DType lse_dtype(DType t) { return t == DType::f64 ? DType::f64 : DType::f32; }

// Fills `g` and `p` from a packed qkv and checks them (and the mask).
AttnPacked packed_geometry(const Tensor& qkv, int64_t heads, bool batch_first, const Tensor* mask, AttnGeom& g, const char* op) {
  if (qkv.dtype != DType::f32 && qkv.dtype != DType::bf16 && qkv.dtype != DType::f16)
    fail(Code::DType, op, ": packed qkv must be f32, bf16 or f16, got ", dtype_name(qkv.dtype));
  if (qkv.dim() != 3 || qkv.shape[2] % 3 != 0)
    fail(Code::Shape, op, ": packed qkv must be 3-D with 3·embed features, got ", shape_str(qkv.shape));
  const int64_t embed = qkv.shape[2] / 3;
  if (heads < 1 || embed % heads != 0) fail(Code::Shape, op, ": embed ", embed, " does not split into ", heads, " heads");
  AttnPacked p{heads, batch_first ? qkv.shape[0] : qkv.shape[1], batch_first ? qkv.shape[1] : qkv.shape[0], embed, batch_first};
  g.bh = p.n * heads;
  g.tq = g.tk = p.len;
  g.d = g.dv = embed / heads;
  mask_geometry(qkv, mask, g, op);
  return p;
}

Shape packed_out_shape(const AttnPacked& p) { return p.batch_first ? Shape{p.n, p.len, p.embed} : Shape{p.len, p.n, p.embed}; }

}  // namespace

std::vector<Tensor> attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask, AttnGeom g) {
  const char* op = "scaledDotProductAttention";
  attn_geometry(q, k, v, mask, g, op);
  Tensor out = empty({g.bh, g.tq, g.dv}, q.dtype, q.device(), op);
  Tensor lse = empty({g.bh, g.tq}, lse_dtype(q.dtype), q.device(), op);
  if (g.bh * g.tq > 0) {  // lse is needed even when dv is 0
    const bool has_mask = mask != nullptr;
    Tensor m = has_mask ? *mask : Tensor{};
    auto kernel = attention_forward_table().get(q.device());
    enqueue(op, q.device(), [=]() mutable { kernel(q, k, v, has_mask ? &m : nullptr, out, lse, g); });
  }
  return {out, lse};
}

std::vector<Tensor> attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask, const Tensor& out,
                                       const Tensor& lse, const Tensor& gout, AttnGeom g) {
  const char* op = "scaledDotProductAttentionBackward";
  attn_geometry(q, k, v, mask, g, op);
  check_same_device(out, q, op);
  check_same_device(lse, q, op);
  check_same_device(gout, q, op);
  const Shape os{g.bh, g.tq, g.dv};
  if (out.shape != os || gout.shape != os || out.dtype != q.dtype || gout.dtype != q.dtype)
    fail(Code::Shape, op, ": output and its gradient must be ", shape_str(os), " ", dtype_name(q.dtype), ", got ",
         shape_str(out.shape), " and ", shape_str(gout.shape));
  if (lse.shape != Shape{g.bh, g.tq} || lse.dtype != lse_dtype(q.dtype))
    fail(Code::Shape, op, ": logsumexp must be [", g.bh, ", ", g.tq, "] ", dtype_name(lse_dtype(q.dtype)), ", got ",
         shape_str(lse.shape));
  Tensor gq = empty(q.shape, q.dtype, q.device(), op);
  Tensor gk = empty(k.shape, k.dtype, k.device(), op);
  Tensor gv = empty(v.shape, v.dtype, v.device(), op);
  Tensor delta = empty({g.bh, g.tq}, lse.dtype, q.device(), op);
  if (gq.numel() + gk.numel() + gv.numel() > 0) {
    const bool has_mask = mask != nullptr;
    Tensor m = has_mask ? *mask : Tensor{};
    auto kernel = attention_backward_table().get(q.device());
    enqueue(op, q.device(), [=]() mutable { kernel(q, k, v, has_mask ? &m : nullptr, out, lse, gout, delta, gq, gk, gv, g); });
  }
  return {gq, gk, gv};
}

std::vector<Tensor> attention_packed_forward(const Tensor& qkv, int64_t heads, bool batch_first, const Tensor* mask, AttnGeom g) {
  const char* op = "scaledDotProductAttention";
  const AttnPacked p = packed_geometry(qkv, heads, batch_first, mask, g, op);
  auto kernel = attention_packed_forward_table().get(qkv.device());
  Tensor out = empty(packed_out_shape(p), qkv.dtype, qkv.device(), op);
  Tensor lse = empty({g.bh, g.tq}, DType::f32, qkv.device(), op);
  if (g.bh * g.tq * g.d > 0) {
    const bool has_mask = mask != nullptr;
    Tensor m = has_mask ? *mask : Tensor{};
    enqueue(op, qkv.device(), [=]() mutable { kernel(qkv, has_mask ? &m : nullptr, out, lse, g, p); });
  }
  return {out, lse};
}

Tensor attention_packed_backward(const Tensor& qkv, int64_t heads, bool batch_first, const Tensor* mask, const Tensor& out,
                                 const Tensor& lse, const Tensor& gout, AttnGeom g) {
  const char* op = "scaledDotProductAttentionBackward";
  const AttnPacked p = packed_geometry(qkv, heads, batch_first, mask, g, op);
  auto kernel = attention_packed_backward_table().get(qkv.device());
  for (const Tensor* t : {&out, &lse, &gout}) check_same_device(*t, qkv, op);
  const Shape os = packed_out_shape(p);
  if (out.shape != os || gout.shape != os || out.dtype != qkv.dtype || gout.dtype != qkv.dtype)
    fail(Code::Shape, op, ": output and its gradient must be ", shape_str(os), " ", dtype_name(qkv.dtype), ", got ",
         shape_str(out.shape), " and ", shape_str(gout.shape));
  if (lse.shape != Shape{g.bh, g.tq} || lse.dtype != DType::f32)
    fail(Code::Shape, op, ": logsumexp must be [", g.bh, ", ", g.tq, "] f32, got ", shape_str(lse.shape));
  Tensor gqkv = empty(qkv.shape, qkv.dtype, qkv.device(), op);
  Tensor delta = empty({g.bh, g.tq}, DType::f32, qkv.device(), op);
  if (g.bh * g.tq * g.d > 0) {
    const bool has_mask = mask != nullptr;
    Tensor m = has_mask ? *mask : Tensor{};
    enqueue(op, qkv.device(), [=]() mutable { kernel(qkv, has_mask ? &m : nullptr, out, lse, gout, delta, gqkv, g, p); });
  }
  return gqkv;
}

}  // namespace flock::ops
