// Neural-network exports: convolution, pooling, fused cross-entropy and fused optimizer steps.
// Geometry arrives as [h, w] pairs; every value is range-checked here before reaching the core.
#include "../ops/nn.h"
#include "addon.h"
#include "convert.h"

namespace flock::js {
namespace {

// JS numbers are exact up to 2^53 − 1 (Philox seeds and offsets come from lib/random.ts).
constexpr int64_t kMaxSafe = (int64_t(1) << 53) - 1;

constexpr int64_t kBig = int64_t(1) << 30;

Napi::Value out(const Napi::CallbackInfo& info, Tensor t) { return Addon::of(info.Env()).wrap(info.Env(), std::move(t)); }

Napi::Value pair_out(const Napi::CallbackInfo& info, std::vector<Tensor> ts) {
  Napi::Array arr = Napi::Array::New(info.Env(), ts.size());
  for (uint32_t i = 0; i < ts.size(); ++i) arr.Set(i, out(info, ts[i]));
  return arr;
}

std::pair<int64_t, int64_t> pair(const Args& a, size_t i, const char* name, int64_t lo) {
  auto v = a.ints(i, name, lo, kBig);
  if (v.size() != 2) fail(Code::Arg, a.op, ": ", name, " must be a pair [h, w]");
  return {v[0], v[1]};
}

// (…, stride, padding, dilation, groups) starting at argument i.
ops::Conv2dArgs conv_args(const Args& a, size_t i) {
  ops::Conv2dArgs c;
  std::tie(c.sh, c.sw) = pair(a, i, "stride", 1);
  std::tie(c.ph, c.pw) = pair(a, i + 1, "padding", 0);
  std::tie(c.dh, c.dw) = pair(a, i + 2, "dilation", 1);
  c.groups = a.integer(i + 3, "groups", 1, kBig);
  return c;
}

// (…, kernel, stride, padding, dilation, ceilMode, countIncludePad) starting at argument i.
ops::Pool2dArgs pool_args(const Args& a, size_t i) {
  ops::Pool2dArgs p{};
  std::tie(p.kh, p.kw) = pair(a, i, "kernelSize", 1);
  std::tie(p.sh, p.sw) = pair(a, i + 1, "stride", 1);
  std::tie(p.ph, p.pw) = pair(a, i + 2, "padding", 0);
  std::tie(p.dh, p.dw) = pair(a, i + 3, "dilation", 1);
  p.ceil_mode = a.boolean(i + 4, "ceilMode");
  p.count_include_pad = a.boolean(i + 5, "countIncludePad");
  return p;
}

Napi::Value Conv2d(const Napi::CallbackInfo& info) {
  Args a{info, "conv2d"};
  Tensor x = a.tensor(0, "input"), w = a.tensor(1, "weight");
  const ops::Conv2dArgs c = conv_args(a, 2);
  const bool has_bias = !a.at(6).IsUndefined() && !a.at(6).IsNull();
  Tensor b = has_bias ? a.tensor(6, "bias") : Tensor{};
  return out(info, ops::conv2d_forward(x, w, has_bias ? &b : nullptr, c));
}

Napi::Value Conv2dBackwardInput(const Napi::CallbackInfo& info) {
  Args a{info, "conv2dBackwardInput"};
  Tensor gy = a.tensor(0, "grad"), w = a.tensor(1, "weight");
  Shape s = a.shape(2, "inputShape");
  return out(info, ops::conv2d_backward_input(gy, w, s, conv_args(a, 3)));
}

Napi::Value Conv2dBackwardWeight(const Napi::CallbackInfo& info) {
  Args a{info, "conv2dBackwardWeight"};
  Tensor x = a.tensor(0, "input"), gy = a.tensor(1, "grad");
  Shape s = a.shape(2, "weightShape");
  return out(info, ops::conv2d_backward_weight(x, gy, s, conv_args(a, 3)));
}

Napi::Value MaxPool2d(const Napi::CallbackInfo& info) {
  Args a{info, "maxPool2d"};
  Tensor x = a.tensor(0, "input");
  return pair_out(info, ops::max_pool2d_forward(x, pool_args(a, 1)));
}

Napi::Value MaxPool2dBackward(const Napi::CallbackInfo& info) {
  Args a{info, "maxPool2dBackward"};
  Tensor gy = a.tensor(0, "grad"), idx = a.tensor(1, "indices");
  Shape s = a.shape(2, "inputShape");
  return out(info, ops::max_pool2d_backward(gy, idx, s, pool_args(a, 3)));
}

Napi::Value AvgPool2d(const Napi::CallbackInfo& info) {
  Args a{info, "avgPool2d"};
  Tensor x = a.tensor(0, "input");
  return out(info, ops::avg_pool2d_forward(x, pool_args(a, 1)));
}

Napi::Value AvgPool2dBackward(const Napi::CallbackInfo& info) {
  Args a{info, "avgPool2dBackward"};
  Tensor gy = a.tensor(0, "grad");
  Shape s = a.shape(1, "inputShape");
  return out(info, ops::avg_pool2d_backward(gy, s, pool_args(a, 2)));
}

Napi::Value AdaptiveAvgPool2d(const Napi::CallbackInfo& info) {
  Args a{info, "adaptiveAvgPool2d"};
  Tensor x = a.tensor(0, "input");
  auto [oh, ow] = pair(a, 1, "outputSize", 1);
  return out(info, ops::adaptive_avg_pool2d_forward(x, oh, ow));
}

Napi::Value LayerNormBackward(const Napi::CallbackInfo& info) {
  Args a{info, "layerNormBackward"};
  Tensor x = a.tensor(0, "input"), mean = a.tensor(1, "mean"), rstd = a.tensor(2, "rstd");
  const bool has_w = present(a, 3);
  Tensor w = has_w ? a.tensor(3, "weight") : Tensor{};
  Tensor gy = a.tensor(4, "grad");
  const bool want_w = a.boolean(5, "weightGrad"), want_b = a.boolean(6, "biasGrad");
  ops::LayerNormGrads g = ops::layer_norm_backward(x, mean, rstd, has_w ? &w : nullptr, gy, want_w, want_b);
  Napi::Array arr = Napi::Array::New(info.Env(), 3);
  arr.Set(0u, out(info, g.gx));
  arr.Set(1u, g.gweight ? out(info, *g.gweight) : info.Env().Null());
  arr.Set(2u, g.gbias ? out(info, *g.gbias) : info.Env().Null());
  return arr;
}

Napi::Value AdamStep(const Napi::CallbackInfo& info) {
  Args a{info, "adamStep"};
  auto p = a.tensors(0, "params"), g = a.tensors(1, "grads"), m = a.tensors(2, "expAvg"), v = a.tensors(3, "expAvgSq");
  auto mv = a.tensors(4, "maxExpAvgSq");
  AdamConfig c{a.number(5, "lr"),          a.number(6, "beta1"),       a.number(7, "beta2"),
               a.number(8, "eps"),         a.number(9, "weightDecay"), a.integer(10, "step", 1, int64_t(1) << 52),
               a.boolean(11, "decoupled"), a.boolean(12, "amsgrad"),   a.boolean(13, "maximize")};
  auto masters = a.tensors(14, "masters");
  c.stochastic_rounding = a.boolean(15, "stochasticRounding");
  c.seed = static_cast<uint64_t>(a.integer(16, "seed", 0, kMaxSafe));
  c.offset = static_cast<uint64_t>(a.integer(17, "offset", 0, kMaxSafe));
  ops::adam_step(std::move(p), std::move(g), std::move(m), std::move(v), std::move(mv), std::move(masters), c);
  return info.Env().Undefined();
}

Napi::Value SgdStep(const Napi::CallbackInfo& info) {
  Args a{info, "sgdStep"};
  auto p = a.tensors(0, "params"), g = a.tensors(1, "grads"), b = a.tensors(2, "momentumBuffers");
  SgdConfig c{a.number(3, "lr"),        a.number(4, "momentum"),   a.number(5, "dampening"), a.number(6, "weightDecay"),
              a.boolean(7, "nesterov"), a.boolean(8, "firstStep"), a.boolean(9, "maximize")};
  auto masters = a.tensors(10, "masters");
  c.stochastic_rounding = a.boolean(11, "stochasticRounding");
  c.seed = static_cast<uint64_t>(a.integer(12, "seed", 0, kMaxSafe));
  c.offset = static_cast<uint64_t>(a.integer(13, "offset", 0, kMaxSafe));
  ops::sgd_step(std::move(p), std::move(g), std::move(b), std::move(masters), c);
  return info.Env().Undefined();
}

Napi::Value RmspropStep(const Napi::CallbackInfo& info) {
  Args a{info, "rmspropStep"};
  auto p = a.tensors(0, "params"), g = a.tensors(1, "grads"), sq = a.tensors(2, "squareAvg"), ga = a.tensors(3, "gradAvg");
  auto b = a.tensors(4, "momentumBuffers");
  RmspropConfig c{a.number(5, "lr"),       a.number(6, "alpha"),      a.number(7, "eps"),       a.number(8, "weightDecay"),
                  a.number(9, "momentum"), a.boolean(10, "centered"), a.boolean(11, "maximize")};
  auto masters = a.tensors(12, "masters");
  c.stochastic_rounding = a.boolean(13, "stochasticRounding");
  c.seed = static_cast<uint64_t>(a.integer(14, "seed", 0, kMaxSafe));
  c.offset = static_cast<uint64_t>(a.integer(15, "offset", 0, kMaxSafe));
  ops::rmsprop_step(std::move(p), std::move(g), std::move(sq), std::move(ga), std::move(b), std::move(masters), c);
  return info.Env().Undefined();
}

Napi::Value AdagradStep(const Napi::CallbackInfo& info) {
  Args a{info, "adagradStep"};
  auto p = a.tensors(0, "params"), g = a.tensors(1, "grads"), sums = a.tensors(2, "sums");
  AdagradConfig c{a.number(3, "lr"),
                  a.number(4, "lrDecay"),
                  a.number(5, "eps"),
                  a.number(6, "weightDecay"),
                  a.integer(7, "step", 1, int64_t(1) << 52),
                  a.boolean(8, "maximize")};
  auto masters = a.tensors(9, "masters");
  c.stochastic_rounding = a.boolean(10, "stochasticRounding");
  c.seed = static_cast<uint64_t>(a.integer(11, "seed", 0, kMaxSafe));
  c.offset = static_cast<uint64_t>(a.integer(12, "offset", 0, kMaxSafe));
  ops::adagrad_step(std::move(p), std::move(g), std::move(sums), std::move(masters), c);
  return info.Env().Undefined();
}

}  // namespace

}  // namespace flock::js

#include "../generated/register_nn.inc"
