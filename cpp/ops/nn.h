// Front ends of the neural-network ops: validate, allocate outputs, enqueue the nn kernels.
#pragma once
#include <optional>
#include <vector>
#include "../bias_act.h"
#include "../nn_kernels.h"

namespace flock::ops {

struct Conv2dArgs {
  int64_t sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1, groups = 1;
};

Tensor conv2d_forward(const Tensor& x, const Tensor& w, const Tensor* bias, const Conv2dArgs& a);
// Gradient of conv2d with respect to its input of shape `input_shape` (also ConvTranspose2d's forward).
Tensor conv2d_backward_input(const Tensor& gy, const Tensor& w, const Shape& input_shape, const Conv2dArgs& a);
Tensor conv2d_backward_weight(const Tensor& x, const Tensor& gy, const Shape& weight_shape, const Conv2dArgs& a);

struct Pool2dArgs {
  int64_t kh, kw, sh, sw, ph = 0, pw = 0, dh = 1, dw = 1;
  bool ceil_mode = false, count_include_pad = true;
};
// Returns {values, indices}.
std::vector<Tensor> max_pool2d_forward(const Tensor& x, const Pool2dArgs& a);
Tensor max_pool2d_backward(const Tensor& gy, const Tensor& indices, const Shape& input_shape, const Pool2dArgs& a);
Tensor avg_pool2d_forward(const Tensor& x, const Pool2dArgs& a);
Tensor avg_pool2d_backward(const Tensor& gy, const Shape& input_shape, const Pool2dArgs& a);
Tensor adaptive_avg_pool2d_forward(const Tensor& x, int64_t oh, int64_t ow);
Tensor adaptive_avg_pool2d_backward(const Tensor& gy, const Shape& input_shape);

// Returns {per-row loss, per-row logsumexp}.
std::vector<Tensor> cross_entropy_forward(const Tensor& logits, const Tensor& target, int64_t ignore_index, double smoothing);
Tensor cross_entropy_backward(const Tensor& logits, const Tensor& target, const Tensor& lse, const Tensor& gloss,
                              int64_t ignore_index, double smoothing);

// Layer norm of each row of x [rows, d], affine fused (weight, bias [d] may be null); returns
// {y, mean [rows], rstd [rows]}.
std::vector<Tensor> layer_norm_forward(const Tensor& x, const Tensor* weight, const Tensor* bias, double eps);
// dx, and dweight/dbias when asked for (column sums over the rows, in the same kernel call).
struct LayerNormGrads {
  Tensor gx;
  std::optional<Tensor> gweight, gbias;
};
LayerNormGrads layer_norm_backward(const Tensor& x, const Tensor& mean, const Tensor& rstd, const Tensor* weight,
                                   const Tensor& gy, bool want_weight, bool want_bias);

// y = act(x + bias) for x [rows, n] and bias [n].
// act(x + bias) by rows; with `in_place`, written into x's storage (the result aliases x).
Tensor bias_act(const Tensor& x, const Tensor& bias, BiasAct act, bool in_place = false);
// grad · act'(pre): pre = saved + bias, or saved itself when bias is null (see bias_act.h).
Tensor bias_act_backward(const Tensor& gy, const Tensor& saved, const Tensor* bias, BiasAct act);

// `masters`: empty, or the f32 master weights of bf16/f16 params (see nn_kernels.h).
void adam_step(std::vector<Tensor> params, std::vector<Tensor> grads, std::vector<Tensor> m, std::vector<Tensor> v,
               std::vector<Tensor> max_v, std::vector<Tensor> masters, const AdamConfig& cfg);
void sgd_step(std::vector<Tensor> params, std::vector<Tensor> grads, std::vector<Tensor> bufs, std::vector<Tensor> masters,
              const SgdConfig& cfg);
void rmsprop_step(std::vector<Tensor> params, std::vector<Tensor> grads, std::vector<Tensor> square_avg,
                  std::vector<Tensor> grad_avg, std::vector<Tensor> bufs, std::vector<Tensor> masters, const RmspropConfig& cfg);
void adagrad_step(std::vector<Tensor> params, std::vector<Tensor> grads, std::vector<Tensor> sums, std::vector<Tensor> masters,
                  const AdagradConfig& cfg);
// GradScaler.unscale_: every tensor times inv_scale in place; `found_inf` (0-d f32) set to 1 on inf/NaN.
void amp_unscale(std::vector<Tensor> ts, const Tensor& found_inf, double inv_scale);

// The p-norm (p = Infinity: max-abs) of all tensors together, as a 0-d tensor on their device.
Tensor grad_norm(std::vector<Tensor> ts, double p);
// Scales every tensor in place by min(1, max_norm / (total + 1e-6)).
void clip_by_norm(std::vector<Tensor> ts, const Tensor& total, double max_norm);

}  // namespace flock::ops
