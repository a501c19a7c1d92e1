// Fused attention exports. Arguments: q, k, v as 3-D [batch, seq, dim] tensors, the mask (or
// null) as 3-D [mask batch, 1 | tq, 1 | tk] with its batch divisor and period, then causal, scale,
// dropout probability and the Philox seed and offset. Every value is range-checked here.
#include "../nn_kernels.h"
#include "../ops/ops.h"
#include "addon.h"
#include "convert.h"

namespace flock::js {
namespace {

constexpr int64_t kMaxSafe = (int64_t(1) << 53) - 1;

Napi::Value list_out(const Napi::CallbackInfo& info, const std::vector<Tensor>& ts) {
  Napi::Array arr = Napi::Array::New(info.Env(), ts.size());
  for (uint32_t i = 0; i < ts.size(); ++i) arr.Set(i, Addon::of(info.Env()).wrap(info.Env(), ts[i]));
  return arr;
}

// Reads (mask, maskDiv, maskMod, causal, scale, dropoutP, seed, offset) starting at argument i.
AttnGeom geometry(const Args& a, size_t i, bool& has_mask, Tensor& mask) {
  has_mask = !a.at(i).IsUndefined() && !a.at(i).IsNull();
  if (has_mask) mask = a.tensor(i, "attnMask");
  AttnGeom g{};
  g.mask_div = a.integer(i + 1, "maskDivisor", 1, kMaxSafe);
  g.mask_mod = a.integer(i + 2, "maskPeriod", 1, kMaxSafe);
  g.causal = a.boolean(i + 3, "isCausal");
  g.scale = a.number(i + 4, "scale");
  g.dropout_p = a.number(i + 5, "dropoutP");
  g.seed = static_cast<uint64_t>(a.integer(i + 6, "seed", 0, kMaxSafe));
  g.offset = static_cast<uint64_t>(a.integer(i + 7, "offset", 0, kMaxSafe));
  return g;
}

Napi::Value Attention(const Napi::CallbackInfo& info) {
  Args a{info, "scaledDotProductAttention"};
  Tensor q = a.tensor(0, "query"), k = a.tensor(1, "key"), v = a.tensor(2, "value");
  bool has_mask = false;
  Tensor mask;
  const AttnGeom g = geometry(a, 3, has_mask, mask);
  return list_out(info, ops::attention_forward(q, k, v, has_mask ? &mask : nullptr, g));
}

Napi::Value AttentionBackward(const Napi::CallbackInfo& info) {
  Args a{info, "scaledDotProductAttentionBackward"};
  Tensor q = a.tensor(0, "query"), k = a.tensor(1, "key"), v = a.tensor(2, "value");
  Tensor out = a.tensor(3, "output"), lse = a.tensor(4, "logsumexp"), gout = a.tensor(5, "grad");
  bool has_mask = false;
  Tensor mask;
  const AttnGeom g = geometry(a, 6, has_mask, mask);
  return list_out(info, ops::attention_backward(q, k, v, has_mask ? &mask : nullptr, out, lse, gout, g));
}

// attentionPacked(qkv, heads, batchFirst, mask, maskDivisor, maskPeriod, causal, scale, dropoutP, seed, offset).
Napi::Value AttentionPacked(const Napi::CallbackInfo& info) {
  Args a{info, "scaledDotProductAttention"};
  Tensor qkv = a.tensor(0, "qkv");
  const int64_t heads = a.integer(1, "heads", 1, kMaxSafe);
  const bool batch_first = a.boolean(2, "batchFirst");
  bool has_mask = false;
  Tensor mask;
  const AttnGeom g = geometry(a, 3, has_mask, mask);
  return list_out(info, ops::attention_packed_forward(qkv, heads, batch_first, has_mask ? &mask : nullptr, g));
}

// attentionPackedBackward(qkv, out, lse, grad, heads, batchFirst, mask, ...): the gradient of qkv.
Napi::Value AttentionPackedBackward(const Napi::CallbackInfo& info) {
  Args a{info, "scaledDotProductAttentionBackward"};
  Tensor qkv = a.tensor(0, "qkv"), out = a.tensor(1, "output"), lse = a.tensor(2, "logsumexp"), gout = a.tensor(3, "grad");
  const int64_t heads = a.integer(4, "heads", 1, kMaxSafe);
  const bool batch_first = a.boolean(5, "batchFirst");
  bool has_mask = false;
  Tensor mask;
  const AttnGeom g = geometry(a, 6, has_mask, mask);
  Tensor gqkv = ops::attention_packed_backward(qkv, heads, batch_first, has_mask ? &mask : nullptr, out, lse, gout, g);
  return Addon::of(info.Env()).wrap(info.Env(), gqkv);
}

}  // namespace

}  // namespace flock::js

#include "../generated/register_attention.inc"
