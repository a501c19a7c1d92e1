// Kernel families of the neural-network layer (conv, pooling, fused losses, fused optimizer steps).
// Kept apart from kernels.h so the core op table stays small; same registration scheme.
#pragma once
#include <cstdint>
#include <vector>
#include "dispatch.h"
#include "tensor.h"

namespace flock {

// Geometry of a 2-D convolution (NCHW input, [OC, C/groups, KH, KW] weight).
struct Conv2dGeom {
  int64_t n, c, h, w, oc, kh, kw, oh, ow;
  int64_t sh, sw, ph, pw, dh, dw, groups;
};

// Geometry of a 2-D pooling window over an NCHW input.
struct Pool2dGeom {
  int64_t n, c, h, w, kh, kw, oh, ow;
  int64_t sh, sw, ph, pw, dh, dw;
  bool count_include_pad;
};

struct AdamConfig {
  double lr, beta1, beta2, eps, weight_decay;
  int64_t step;
  bool decoupled;  // AdamW: decay the weights directly instead of adding to the gradient
  bool amsgrad;    // divide by the running maximum of exp_avg_sq (kept in its own list)
  bool maximize;   // ascend: the gradient's sign is flipped before anything else
  // With f32 master weights (bf16/f16 params): round the working copy stochastically, drawing
  // Philox (seed, offset + element / 4) over the call's elements in order.
  bool stochastic_rounding = false;
  uint64_t seed = 0, offset = 0;
};

struct SgdConfig {
  double lr, momentum, dampening, weight_decay;
  bool nesterov, first_step, maximize;
  bool stochastic_rounding = false;  // as AdamConfig's
  uint64_t seed = 0, offset = 0;
};

// torch.optim.RMSprop: square_avg = α·square_avg + (1 − α)·g²; centered subtracts grad_avg² under the root.
struct RmspropConfig {
  double lr, alpha, eps, weight_decay, momentum;
  bool centered, maximize;
  bool stochastic_rounding = false;  // as AdamConfig's
  uint64_t seed = 0, offset = 0;
};

// torch.optim.Adagrad: the step (≥ 1, shared by the call's params) sets lr / (1 + (step − 1)·lr_decay).
struct AdagradConfig {
  double lr, lr_decay, eps, weight_decay;
  int64_t step;
  bool maximize;
  bool stochastic_rounding = false;  // as AdamConfig's
  uint64_t seed = 0, offset = 0;
};

// `bias` may be empty (no bias); when given it is added while each image's output is in cache.
FLOCK_DECLARE_KERNEL(conv2d_forward, void(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y, const Conv2dGeom& g))
FLOCK_DECLARE_KERNEL(conv2d_backward_input, void(const Tensor& gy, const Tensor& w, Tensor& gx, const Conv2dGeom& g))
FLOCK_DECLARE_KERNEL(conv2d_backward_weight, void(const Tensor& x, const Tensor& gy, Tensor& gw, const Conv2dGeom& g))
FLOCK_DECLARE_KERNEL(max_pool2d_forward, void(const Tensor& x, Tensor& y, Tensor& indices, const Pool2dGeom& g))
FLOCK_DECLARE_KERNEL(max_pool2d_backward, void(const Tensor& gy, const Tensor& indices, Tensor& gx, const Pool2dGeom& g))
FLOCK_DECLARE_KERNEL(avg_pool2d_forward, void(const Tensor& x, Tensor& y, const Pool2dGeom& g, bool adaptive))
FLOCK_DECLARE_KERNEL(avg_pool2d_backward, void(const Tensor& gy, Tensor& gx, const Pool2dGeom& g, bool adaptive))
// Fused log-softmax + NLL over rows of [rows, classes] logits with integer targets; writes the
// per-row loss and the row's logsumexp (kept for backward).
FLOCK_DECLARE_KERNEL(cross_entropy_forward, void(const Tensor& logits, const Tensor& target, Tensor& loss, Tensor& lse,
                                                 int64_t ignore_index, double smoothing))
FLOCK_DECLARE_KERNEL(cross_entropy_backward, void(const Tensor& logits, const Tensor& target, const Tensor& lse,
                                                  const Tensor& gloss, Tensor& glogits, int64_t ignore_index, double smoothing))
// Layer normalisation of a [rows, d] view with the elementwise affine fused in: y = x̂·weight + bias,
// x̂ the row shifted to zero mean and scaled to unit (biased) variance; weight and bias ([d], the
// input's dtype) may each be null. Saves the per-row mean and 1/std for backward. Group norm runs
// it with neither (its affine is per channel, not per element of a row).
FLOCK_DECLARE_KERNEL(layer_norm_forward, void(const Tensor& x, const Tensor* weight, const Tensor* bias, Tensor& y, Tensor& mean,
                                              Tensor& rstd, double eps))
// dx per row and, when gweight/gbias are given, their column sums over the rows in the same call.
FLOCK_DECLARE_KERNEL(layer_norm_backward, void(const Tensor& x, const Tensor& mean, const Tensor& rstd, const Tensor* weight,
                                               const Tensor& gy, Tensor& gx, Tensor* gweight, Tensor* gbias))
// In-place multi-tensor optimizer steps: every parameter of a group in one queued call.
// `max_v` (amsgrad's running maximum of v) is empty unless cfg.amsgrad. `masters` is empty for
// f32/f64 params; for bf16/f16 params it holds their f32 master weights (llm.c style): grads are
// read in the params' dtype, the masters and the f32 state are updated, and each param receives
// its master rounded to its dtype, all in the same pass.
FLOCK_DECLARE_KERNEL(adam_step, void(std::vector<Tensor>& params, const std::vector<Tensor>& grads, std::vector<Tensor>& m,
                                     std::vector<Tensor>& v, std::vector<Tensor>& max_v, std::vector<Tensor>& masters,
                                     const AdamConfig& cfg))
FLOCK_DECLARE_KERNEL(sgd_step, void(std::vector<Tensor>& params, const std::vector<Tensor>& grads, std::vector<Tensor>& bufs,
                                    std::vector<Tensor>& masters, const SgdConfig& cfg))
// `grad_avg` is empty unless cfg.centered, `bufs` (momentum buffers) empty unless cfg.momentum > 0.
FLOCK_DECLARE_KERNEL(rmsprop_step, void(std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                                        std::vector<Tensor>& square_avg, std::vector<Tensor>& grad_avg, std::vector<Tensor>& bufs,
                                        std::vector<Tensor>& masters, const RmspropConfig& cfg))
FLOCK_DECLARE_KERNEL(adagrad_step, void(std::vector<Tensor>& params, const std::vector<Tensor>& grads, std::vector<Tensor>& sums,
                                        std::vector<Tensor>& masters, const AdagradConfig& cfg))

// Global gradient norm over a list of same-dtype tensors in one queued call: `acc` (0-d f64)
// receives Σ|x|^p (max |x| for p = inf), `out` (0-d, the tensors' dtype) its p-th root.
FLOCK_DECLARE_KERNEL(grad_norm, void(const std::vector<Tensor>& ts, Tensor& acc, Tensor& out, double p))
// In place: every tensor times min(1, max_norm / (total + 1e-6)), read from the 0-d `total` on
// the device, so clipping needs no host round trip.
FLOCK_DECLARE_KERNEL(clip_by_norm, void(std::vector<Tensor>& ts, const Tensor& total, double max_norm))

// Scaled dot-product attention over q [bh, tq, d], k [bh, tk, d], v [bh, tk, dv], never holding the
// [tq, tk] score matrix: scores are made tile by tile with an online softmax. The optional mask
// (kind 1: boolean, true attends; kind 2: additive, q's dtype) holds element (b, i, j) at
// ((b / mask_div) % mask_mod) * mask_batch + i * mask_sq + j * mask_sk. Dropout keeps weight
// (b, i, j) when Philox word e = (b * tq + i) * tk + j, drawn at (seed, offset + e / 4), is uniform
// < 1 - dropout_p: the mask fl.bernoulli([bh, tq, tk], 1 - p) would draw at the same state.
struct AttnGeom {
  int64_t bh, tq, tk, d, dv;
  double scale;
  bool causal;  // key j attends to query i only when j <= i (top-left aligned, as PyTorch)
  int mask_kind;
  int64_t mask_div, mask_mod, mask_batch, mask_sq, mask_sk;
  double dropout_p;
  uint64_t seed, offset;
};
// `lse` (f64 for f64 inputs, f32 otherwise) receives each query row's logsumexp, kept for backward.
FLOCK_DECLARE_KERNEL(attention_forward, void(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask, Tensor& out,
                                             Tensor& lse, const AttnGeom& g))
// Recomputes the scores tile by tile; `delta` ([bh, tq], lse's dtype) is scratch for rowsum(gout * out).
FLOCK_DECLARE_KERNEL(attention_backward, void(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask,
                                              const Tensor& out, const Tensor& lse, const Tensor& gout, Tensor& delta, Tensor& gq,
                                              Tensor& gk, Tensor& gv, const AttnGeom& g))
// Self-attention over one packed projection qkv ([n, len, 3·embed] when batch_first, else
// [len, n, 3·embed]): head h's query, key and value are columns h·d, embed + h·d and 2·embed + h·d
// of each row (d = embed / heads), and out ([n, len, embed] or [len, n, embed]) gets head h in
// columns h·d; AttnGeom's batch b is (b / heads, b % heads). The head split and merge are strides,
// never copies. f32, bf16 and f16; CPU.
struct AttnPacked {
  int64_t heads, n, len, embed;
  bool batch_first;
};
FLOCK_DECLARE_KERNEL(attention_packed_forward, void(const Tensor& qkv, const Tensor* mask, Tensor& out, Tensor& lse,
                                                    const AttnGeom& g, const AttnPacked& p))
// The gradient of qkv, every element written (gqkv has qkv's shape).
FLOCK_DECLARE_KERNEL(attention_packed_backward,
                     void(const Tensor& qkv, const Tensor* mask, const Tensor& out, const Tensor& lse, const Tensor& gout,
                          Tensor& delta, Tensor& gqkv, const AttnGeom& g, const AttnPacked& p))
// Gradient scaling (GradScaler.unscale_): every tensor of the list multiplied in place by
// `inv_scale`, and `found_inf` (0-d f32, on the device) set to 1 if any value is inf or NaN — one
// queued call per device, no host round trip.
FLOCK_DECLARE_KERNEL(amp_unscale, void(std::vector<Tensor>& ts, Tensor& found_inf, double inv_scale))

}  // namespace flock
