// Neural-network op front ends: shape arithmetic of convolution and pooling, checks that name the
// op and the shapes, and the enqueueing of the nn kernels on the device stream.
#include "nn.h"
#include "ops.h"
#include "../cpu/conv_bf16.h"

namespace flock::ops {
namespace {

void check_float(const Tensor& t, const char* op, const char* name) {
  if (!is_floating(t.dtype))
    fail(Code::DType, op, ": ", name, " must be floating (f32, f64, bf16, f16), got ", dtype_name(t.dtype));
}

bool is_low(DType t) { return t == DType::bf16 || t == DType::f16; }

// bf16/f16 operands of the conv, pooling, loss and norm kernels are widened to f32 and their
// results rounded back, so every sum runs in f32 on every device (as PyTorch's CPU kernels do).
Tensor wide(const Tensor& t) { return is_low(t.dtype) ? cast(t, DType::f32) : t; }
Tensor narrow_to(const Tensor& t, DType d) { return t.dtype == d ? t : cast(t, d); }

// The CPU pooling kernels take bf16/f16 planes themselves (compared and summed in f32, each result
// rounded once: the values widening gives); other devices' are widened.
bool low_off_cpu(const Tensor& t) { return is_low(t.dtype) && !t.device().is_cpu(); }

// bf16 on a CPU with AVX512_BF16 convolves in bf16 directly (cpp/cpu/conv_bf16.cc, f32 sums).
bool bf16_conv(const Tensor& t) { return t.dtype == DType::bf16 && t.device().is_cpu() && cpu::conv2d_bf16_available(); }

void check_pair(const Tensor& a, const Tensor& b, const char* op) {
  check_same_device(a, b, op);
  if (a.dtype != b.dtype) fail(Code::DType, op, ": dtypes ", dtype_name(a.dtype), " and ", dtype_name(b.dtype), " differ");
}

Conv2dGeom conv_geom(const Shape& xs, const Shape& ws, const Conv2dArgs& a, const char* op) {
  if (xs.size() != 4) fail(Code::Shape, op, ": input must be 4-D [N, C, H, W], got ", shape_str(xs));
  if (ws.size() != 4) fail(Code::Shape, op, ": weight must be 4-D [OC, C/groups, KH, KW], got ", shape_str(ws));
  if (a.groups < 1 || a.sh < 1 || a.sw < 1 || a.dh < 1 || a.dw < 1 || a.ph < 0 || a.pw < 0)
    fail(Code::Range, op, ": stride and dilation must be ≥ 1, padding ≥ 0 and groups ≥ 1");
  Conv2dGeom g{xs[0], xs[1], xs[2], xs[3], ws[0], ws[2], ws[3], 0, 0, a.sh, a.sw, a.ph, a.pw, a.dh, a.dw, a.groups};
  if (g.c % g.groups || g.oc % g.groups)
    fail(Code::Shape, op, ": input channels ", g.c, " and output channels ", g.oc, " must be divisible by groups ", g.groups);
  if (ws[1] * g.groups != g.c)
    fail(Code::Shape, op, ": weight ", shape_str(ws), " expects ", ws[1] * g.groups, " input channels, input ", shape_str(xs),
         " has ", g.c);
  g.oh = (g.h + 2 * g.ph - g.dh * (g.kh - 1) - 1) / g.sh + 1;
  g.ow = (g.w + 2 * g.pw - g.dw * (g.kw - 1) - 1) / g.sw + 1;
  if (g.h + 2 * g.ph < g.dh * (g.kh - 1) + 1 || g.w + 2 * g.pw < g.dw * (g.kw - 1) + 1)
    fail(Code::Shape, op, ": kernel ", g.kh, "x", g.kw, " (dilation ", g.dh, "x", g.dw, ") is larger than the padded input ",
         shape_str(xs));
  return g;
}

int64_t pool_out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
  const int64_t span = in + 2 * p - d * (k - 1) - 1;
  if (span < 0) return 0;  // the window does not fit (C++ division would round toward zero)
  int64_t o = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
  // The last window must start inside the input or its left padding (PyTorch's rule).
  if (ceil_mode && (o - 1) * s >= in + p) --o;
  return o;
}

Pool2dGeom pool_geom(const Shape& xs, const Pool2dArgs& a, const char* op) {
  if (xs.size() != 4) fail(Code::Shape, op, ": input must be 4-D [N, C, H, W], got ", shape_str(xs));
  if (a.kh < 1 || a.kw < 1 || a.sh < 1 || a.sw < 1 || a.dh < 1 || a.dw < 1)
    fail(Code::Range, op, ": kernel size, stride and dilation must be ≥ 1");
  if (a.ph < 0 || a.pw < 0 || 2 * a.ph > a.kh || 2 * a.pw > a.kw)
    fail(Code::Range, op, ": padding must be ≥ 0 and at most half the kernel size");
  Pool2dGeom g{xs[0], xs[1], xs[2], xs[3], a.kh, a.kw, 0, 0, a.sh, a.sw, a.ph, a.pw, a.dh, a.dw, a.count_include_pad};
  g.oh = pool_out(g.h, a.kh, a.sh, a.ph, a.dh, a.ceil_mode);
  g.ow = pool_out(g.w, a.kw, a.sw, a.pw, a.dw, a.ceil_mode);
  if (g.oh < 1 || g.ow < 1) fail(Code::Shape, op, ": input ", shape_str(xs), " is too small for a ", a.kh, "x", a.kw, " window");
  return g;
}

void check_shape(const Tensor& t, const Shape& s, const char* op, const char* name) {
  if (t.shape != s) fail(Code::Shape, op, ": ", name, " has shape ", shape_str(t.shape), ", expected ", shape_str(s));
}

}  // namespace

Tensor conv2d_forward(const Tensor& x, const Tensor& w, const Tensor* bias, const Conv2dArgs& a) {
  check_float(x, "conv2d", "input");
  check_pair(x, w, "conv2d");
  if (bias) check_pair(x, *bias, "conv2d");
  if (is_low(x.dtype) && !bf16_conv(x)) {
    const Tensor b32 = bias ? wide(*bias) : Tensor{};
    return narrow_to(conv2d_forward(wide(x), wide(w), bias ? &b32 : nullptr, a), x.dtype);
  }
  const Conv2dGeom g = conv_geom(x.shape, w.shape, a, "conv2d");
  Tensor b;
  const bool has_bias = bias != nullptr;
  if (has_bias) {
    check_pair(x, *bias, "conv2d");
    check_shape(*bias, {g.oc}, "conv2d", "bias");
    b = *bias;
  }
  Tensor y = empty({g.n, g.oc, g.oh, g.ow}, x.dtype, x.device(), "conv2d");
  if (y.numel() == 0) return y;
  auto kernel = bf16_conv(x) ? conv2d_forward_bf16_table().get(x.device()) : conv2d_forward_table().get(x.device());
  enqueue("conv2d", x.device(), [=]() mutable { kernel(x, w, has_bias ? &b : nullptr, y, g); });
  return y;
}

Tensor conv2d_backward_input(const Tensor& gy, const Tensor& w, const Shape& input_shape, const Conv2dArgs& a) {
  check_float(gy, "conv2dBackwardInput", "grad");
  check_pair(gy, w, "conv2dBackwardInput");
  if (is_low(gy.dtype) && !bf16_conv(gy)) return narrow_to(conv2d_backward_input(wide(gy), wide(w), input_shape, a), gy.dtype);
  const Conv2dGeom g = conv_geom(input_shape, w.shape, a, "conv2dBackwardInput");
  check_shape(gy, {g.n, g.oc, g.oh, g.ow}, "conv2dBackwardInput", "grad");
  Tensor gx = empty(input_shape, gy.dtype, gy.device(), "conv2dBackwardInput");
  if (gx.numel() == 0) return gx;
  auto kernel =
      bf16_conv(gy) ? conv2d_backward_input_bf16_table().get(gy.device()) : conv2d_backward_input_table().get(gy.device());
  enqueue("conv2dBackwardInput", gy.device(), [=]() mutable { kernel(gy, w, gx, g); });
  return gx;
}

Tensor conv2d_backward_weight(const Tensor& x, const Tensor& gy, const Shape& weight_shape, const Conv2dArgs& a) {
  check_float(x, "conv2dBackwardWeight", "input");
  check_pair(x, gy, "conv2dBackwardWeight");
  if (is_low(x.dtype) && !bf16_conv(x)) return narrow_to(conv2d_backward_weight(wide(x), wide(gy), weight_shape, a), x.dtype);
  const Conv2dGeom g = conv_geom(x.shape, weight_shape, a, "conv2dBackwardWeight");
  check_shape(gy, {g.n, g.oc, g.oh, g.ow}, "conv2dBackwardWeight", "grad");
  Tensor gw = empty(weight_shape, x.dtype, x.device(), "conv2dBackwardWeight");
  if (gw.numel() == 0) return gw;
  auto kernel =
      bf16_conv(x) ? conv2d_backward_weight_bf16_table().get(x.device()) : conv2d_backward_weight_table().get(x.device());
  enqueue("conv2dBackwardWeight", x.device(), [=]() mutable { kernel(x, gy, gw, g); });
  return gw;
}

std::vector<Tensor> max_pool2d_forward(const Tensor& x, const Pool2dArgs& a) {
  check_float(x, "maxPool2d", "input");
  if (low_off_cpu(x)) {
    // Max pooling only selects: the rounded-back maxima are the inputs' own values.
    std::vector<Tensor> r = max_pool2d_forward(wide(x), a);
    return {narrow_to(r[0], x.dtype), r[1]};
  }
  const Pool2dGeom g = pool_geom(x.shape, a, "maxPool2d");
  Tensor y = empty({g.n, g.c, g.oh, g.ow}, x.dtype, x.device(), "maxPool2d");
  Tensor idx = empty({g.n, g.c, g.oh, g.ow}, DType::i64, x.device(), "maxPool2d");
  auto kernel = max_pool2d_forward_table().get(x.device());
  if (y.numel() > 0) enqueue("maxPool2d", x.device(), [=]() mutable { kernel(x, y, idx, g); });
  return {y, idx};
}

Tensor max_pool2d_backward(const Tensor& gy, const Tensor& indices, const Shape& input_shape, const Pool2dArgs& a) {
  check_float(gy, "maxPool2dBackward", "grad");
  if (low_off_cpu(gy)) return narrow_to(max_pool2d_backward(wide(gy), indices, input_shape, a), gy.dtype);
  check_same_device(gy, indices, "maxPool2dBackward");
  if (indices.dtype != DType::i64) fail(Code::DType, "maxPool2dBackward: indices must be i64, got ", dtype_name(indices.dtype));
  const Pool2dGeom g = pool_geom(input_shape, a, "maxPool2dBackward");
  check_shape(gy, {g.n, g.c, g.oh, g.ow}, "maxPool2dBackward", "grad");
  check_shape(indices, gy.shape, "maxPool2dBackward", "indices");
  Tensor gx = empty(input_shape, gy.dtype, gy.device(), "maxPool2dBackward");
  auto kernel = max_pool2d_backward_table().get(gy.device());
  if (gx.numel() > 0) enqueue("maxPool2dBackward", gy.device(), [=]() mutable { kernel(gy, indices, gx, g); });
  return gx;
}

Tensor avg_pool2d_forward(const Tensor& x, const Pool2dArgs& a) {
  check_float(x, "avgPool2d", "input");
  if (low_off_cpu(x)) return narrow_to(avg_pool2d_forward(wide(x), a), x.dtype);
  const Pool2dGeom g = pool_geom(x.shape, a, "avgPool2d");
  Tensor y = empty({g.n, g.c, g.oh, g.ow}, x.dtype, x.device(), "avgPool2d");
  auto kernel = avg_pool2d_forward_table().get(x.device());
  if (y.numel() > 0) enqueue("avgPool2d", x.device(), [=]() mutable { kernel(x, y, g, false); });
  return y;
}

Tensor avg_pool2d_backward(const Tensor& gy, const Shape& input_shape, const Pool2dArgs& a) {
  check_float(gy, "avgPool2dBackward", "grad");
  if (low_off_cpu(gy)) return narrow_to(avg_pool2d_backward(wide(gy), input_shape, a), gy.dtype);
  const Pool2dGeom g = pool_geom(input_shape, a, "avgPool2dBackward");
  check_shape(gy, {g.n, g.c, g.oh, g.ow}, "avgPool2dBackward", "grad");
  Tensor gx = empty(input_shape, gy.dtype, gy.device(), "avgPool2dBackward");
  auto kernel = avg_pool2d_backward_table().get(gy.device());
  if (gx.numel() > 0) enqueue("avgPool2dBackward", gy.device(), [=]() mutable { kernel(gy, gx, g, false); });
  return gx;
}

namespace {
Pool2dGeom adaptive_geom(const Shape& xs, int64_t oh, int64_t ow, const char* op) {
  if (xs.size() != 4) fail(Code::Shape, op, ": input must be 4-D [N, C, H, W], got ", shape_str(xs));
  if (oh < 1 || ow < 1) fail(Code::Arg, op, ": output size must be ≥ 1, got ", oh, "x", ow);
  return Pool2dGeom{xs[0], xs[1], xs[2], xs[3], 0, 0, oh, ow, 1, 1, 0, 0, 1, 1, true};
}
}  // namespace

Tensor adaptive_avg_pool2d_forward(const Tensor& x, int64_t oh, int64_t ow) {
  check_float(x, "adaptiveAvgPool2d", "input");
  if (low_off_cpu(x)) return narrow_to(adaptive_avg_pool2d_forward(wide(x), oh, ow), x.dtype);
  const Pool2dGeom g = adaptive_geom(x.shape, oh, ow, "adaptiveAvgPool2d");
  Tensor y = empty({g.n, g.c, oh, ow}, x.dtype, x.device(), "adaptiveAvgPool2d");
  auto kernel = avg_pool2d_forward_table().get(x.device());
  if (y.numel() > 0) enqueue("adaptiveAvgPool2d", x.device(), [=]() mutable { kernel(x, y, g, true); });
  return y;
}

Tensor adaptive_avg_pool2d_backward(const Tensor& gy, const Shape& input_shape) {
  check_float(gy, "adaptiveAvgPool2dBackward", "grad");
  if (low_off_cpu(gy)) return narrow_to(adaptive_avg_pool2d_backward(wide(gy), input_shape), gy.dtype);
  if (gy.dim() != 4) fail(Code::Shape, "adaptiveAvgPool2dBackward: grad must be 4-D, got ", shape_str(gy.shape));
  const Pool2dGeom g = adaptive_geom(input_shape, gy.shape[2], gy.shape[3], "adaptiveAvgPool2dBackward");
  check_shape(gy, {g.n, g.c, g.oh, g.ow}, "adaptiveAvgPool2dBackward", "grad");
  Tensor gx = empty(input_shape, gy.dtype, gy.device(), "adaptiveAvgPool2dBackward");
  auto kernel = avg_pool2d_backward_table().get(gy.device());
  if (gx.numel() > 0) enqueue("adaptiveAvgPool2dBackward", gy.device(), [=]() mutable { kernel(gy, gx, g, true); });
  return gx;
}

namespace {
void check_ce(const Tensor& logits, const Tensor& target, const char* op) {
  check_float(logits, op, "input");
  check_same_device(logits, target, op);
  if (logits.dim() != 2) fail(Code::Shape, op, ": input must be [rows, classes], got ", shape_str(logits.shape));
  if (target.dtype != DType::i64 && target.dtype != DType::i32)
    fail(Code::DType, op, ": target must be i64 or i32 class indices, got ", dtype_name(target.dtype));
  if (target.dim() != 1 || target.shape[0] != logits.shape[0])
    fail(Code::Shape, op, ": target ", shape_str(target.shape), " must be [", logits.shape[0], "] for input ",
         shape_str(logits.shape));
  if (logits.shape[1] == 0) fail(Code::Shape, op, ": input has no classes");
}
}  // namespace

std::vector<Tensor> cross_entropy_forward(const Tensor& logits, const Tensor& target, int64_t ignore_index, double smoothing) {
  check_ce(logits, target, "crossEntropy");
  if (is_low(logits.dtype)) {
    // The loss is rounded to the logits' dtype; the logsumexp stays f32 for backward.
    std::vector<Tensor> r = cross_entropy_forward(wide(logits), target, ignore_index, smoothing);
    return {narrow_to(r[0], logits.dtype), r[1]};
  }
  Tensor loss = empty({logits.shape[0]}, logits.dtype, logits.device(), "crossEntropy");
  Tensor lse = empty({logits.shape[0]}, logits.dtype, logits.device(), "crossEntropy");
  auto kernel = cross_entropy_forward_table().get(logits.device());
  if (logits.shape[0] > 0)
    enqueue(
        "crossEntropy", logits.device(), [=]() mutable { kernel(logits, target, loss, lse, ignore_index, smoothing); },
        16 * logits.numel());
  return {loss, lse};
}

Tensor cross_entropy_backward(const Tensor& logits, const Tensor& target, const Tensor& lse, const Tensor& gloss,
                              int64_t ignore_index, double smoothing) {
  check_ce(logits, target, "crossEntropyBackward");
  if (is_low(logits.dtype)) {
    check_same_device(logits, gloss, "crossEntropyBackward");
    return narrow_to(cross_entropy_backward(wide(logits), target, wide(lse), wide(gloss), ignore_index, smoothing), logits.dtype);
  }
  check_pair(logits, gloss, "crossEntropyBackward");
  check_shape(gloss, {logits.shape[0]}, "crossEntropyBackward", "grad");
  check_shape(lse, {logits.shape[0]}, "crossEntropyBackward", "lse");
  Tensor gx = empty(logits.shape, logits.dtype, logits.device(), "crossEntropyBackward");
  auto kernel = cross_entropy_backward_table().get(logits.device());
  if (gx.numel() > 0)
    enqueue(
        "crossEntropyBackward", logits.device(),
        [=]() mutable { kernel(logits, target, lse, gloss, gx, ignore_index, smoothing); }, 16 * gx.numel());
  return gx;
}

namespace {
// A layer-norm weight or bias: [d], on the input's device, in its dtype.
void check_affine(const Tensor& x, const Tensor* t, const char* op, const char* name) {
  if (!t) return;
  check_pair(x, *t, op);
  check_shape(*t, {x.shape[1]}, op, name);
}
}  // namespace

std::vector<Tensor> layer_norm_forward(const Tensor& x, const Tensor* weight, const Tensor* bias, double eps) {
  const char* op = "layerNorm";
  check_float(x, op, "input");
  if (is_low(x.dtype)) {
    // bf16/f16: normalised in f32 (statistics stay f32, as PyTorch keeps them in the accumulation
    // type), the output rounded once.
    const Tensor w32 = weight ? wide(*weight) : Tensor{}, b32 = bias ? wide(*bias) : Tensor{};
    std::vector<Tensor> r = layer_norm_forward(wide(x), weight ? &w32 : nullptr, bias ? &b32 : nullptr, eps);
    return {narrow_to(r[0], x.dtype), r[1], r[2]};
  }
  if (x.dim() != 2) fail(Code::Shape, op, ": input must be [rows, d], got ", shape_str(x.shape));
  if (!(eps >= 0)) fail(Code::Range, op, ": eps must be ≥ 0, got ", eps);
  check_affine(x, weight, op, "weight");
  check_affine(x, bias, op, "bias");
  Tensor y = empty(x.shape, x.dtype, x.device(), op);
  Tensor mean = empty({x.shape[0]}, x.dtype, x.device(), op);
  Tensor rstd = empty({x.shape[0]}, x.dtype, x.device(), op);
  const std::optional<Tensor> w = weight ? std::optional<Tensor>(*weight) : std::nullopt;
  const std::optional<Tensor> b = bias ? std::optional<Tensor>(*bias) : std::nullopt;
  auto kernel = layer_norm_forward_table().get(x.device());
  if (x.numel() > 0)
    enqueue(op, x.device(), [=]() mutable { kernel(x, w ? &*w : nullptr, b ? &*b : nullptr, y, mean, rstd, eps); });
  return {y, mean, rstd};
}

LayerNormGrads layer_norm_backward(const Tensor& x, const Tensor& mean, const Tensor& rstd, const Tensor* weight,
                                   const Tensor& gy, bool want_weight, bool want_bias) {
  const char* op = "layerNormBackward";
  check_float(x, op, "input");
  if (is_low(x.dtype)) {
    check_same_device(x, gy, op);
    const Tensor w32 = weight ? wide(*weight) : Tensor{};
    LayerNormGrads r =
        layer_norm_backward(wide(x), wide(mean), wide(rstd), weight ? &w32 : nullptr, wide(gy), want_weight, want_bias);
    r.gx = narrow_to(r.gx, x.dtype);
    if (r.gweight) r.gweight = narrow_to(*r.gweight, weight->dtype);
    if (r.gbias) r.gbias = narrow_to(*r.gbias, x.dtype);
    return r;
  }
  check_pair(x, gy, op);
  check_pair(x, mean, op);
  check_pair(x, rstd, op);
  if (x.dim() != 2) fail(Code::Shape, op, ": input must be [rows, d], got ", shape_str(x.shape));
  check_shape(gy, x.shape, op, "grad");
  check_shape(mean, {x.shape[0]}, op, "mean");
  check_shape(rstd, {x.shape[0]}, op, "rstd");
  check_affine(x, weight, op, "weight");
  if (want_weight && !weight) fail(Code::Arg, op, ": a weight gradient was asked for without a weight");
  LayerNormGrads r;
  r.gx = empty(x.shape, x.dtype, x.device(), op);
  const std::optional<Tensor> w = weight ? std::optional<Tensor>(*weight) : std::nullopt;
  std::optional<Tensor> gw, gb;
  // With no rows the column sums are empty sums: zeros, as PyTorch gives.
  auto param_grad = [&] {
    return x.shape[0] == 0 ? full({x.shape[1]}, x.dtype, x.device(), 0.0) : empty({x.shape[1]}, x.dtype, x.device(), op);
  };
  if (want_weight) gw = param_grad();
  if (want_bias) gb = param_grad();
  r.gweight = gw;
  r.gbias = gb;
  Tensor gx = r.gx;
  auto kernel = layer_norm_backward_table().get(x.device());
  if (x.numel() > 0)
    enqueue(op, x.device(),
            [=]() mutable { kernel(x, mean, rstd, w ? &*w : nullptr, gy, gx, gw ? &*gw : nullptr, gb ? &*gb : nullptr); });
  return r;
}

namespace {
// Every list entry k matches param k's shape and device; `state_dtype` is the dtype the f32/f64
// state has (the param's own) or f32 for the masters and state of bf16/f16 params.
void check_list(const std::vector<Tensor>& params, const std::vector<Tensor>& list, bool state, const char* op,
                const char* name) {
  for (size_t k = 0; k < params.size(); ++k) {
    const Tensor& p = params[k];
    const Tensor& t = list[k];
    const DType want = state && is_low(p.dtype) ? DType::f32 : p.dtype;
    if (t.dtype != want || t.device() != p.device() || t.shape != p.shape)
      fail(Code::Shape, op, ": ", name, " tensor ", k, " ", shape_str(t.shape), " ", dtype_name(t.dtype), " on ",
           t.device().str(), " does not match param ", shape_str(p.shape), " ", dtype_name(p.dtype), " (expected ",
           dtype_name(want), ")");
  }
}

int64_t total_numel(const std::vector<Tensor>& ts) {
  int64_t n = 0;
  for (const Tensor& t : ts) n += t.numel();
  return n;
}

void check_params(const std::vector<Tensor>& params, const std::vector<Tensor>& masters, const char* op) {
  if (params.empty()) return;
  const Device dev = params[0].device();
  bool any_low = false;
  for (size_t k = 0; k < params.size(); ++k) {
    check_float(params[k], op, "params");
    if (params[k].device() != dev) fail(Code::Device, op, ": all params of one call must be on one device");
    any_low = any_low || is_low(params[k].dtype);
  }
  if (!masters.empty() && masters.size() != params.size())
    fail(Code::Arg, op, ": ", masters.size(), " master weights for ", params.size(), " params");
  if (any_low && masters.empty())
    fail(Code::DType, op, ": bf16/f16 params are updated through f32 master weights; pass one per param");
  if (!masters.empty()) {
    for (size_t k = 0; k < params.size(); ++k)
      if (!is_low(params[k].dtype))
        fail(Code::DType, op, ": master weights are for bf16/f16 params only; param ", k, " is ", dtype_name(params[k].dtype));
    check_list(params, masters, true, op, "master weight");
  }
}
}  // namespace

void adam_step(std::vector<Tensor> params, std::vector<Tensor> grads, std::vector<Tensor> m, std::vector<Tensor> v,
               std::vector<Tensor> max_v, std::vector<Tensor> masters, const AdamConfig& cfg) {
  if (grads.size() != params.size() || m.size() != params.size() || v.size() != params.size())
    fail(Code::Arg, "adamStep: params, grads, exp_avg and exp_avg_sq must have equal lengths");
  if (max_v.size() != (cfg.amsgrad ? params.size() : 0))
    fail(Code::Arg, "adamStep: amsgrad needs one max_exp_avg_sq per param (and none without it), got ", max_v.size(), " for ",
         params.size());
  check_params(params, masters, "adamStep");
  check_list(params, grads, false, "adamStep", "grad");
  check_list(params, m, true, "adamStep", "exp_avg");
  check_list(params, v, true, "adamStep", "exp_avg_sq");
  if (cfg.amsgrad) check_list(params, max_v, true, "adamStep", "max_exp_avg_sq");
  if (params.empty()) return;
  const Device dev = params[0].device();
  auto kernel = adam_step_table().get(dev);
  enqueue(
      "adamStep", dev, [=]() mutable { kernel(params, grads, m, v, max_v, masters, cfg); }, 8 * total_numel(params));
}

void sgd_step(std::vector<Tensor> params, std::vector<Tensor> grads, std::vector<Tensor> bufs, std::vector<Tensor> masters,
              const SgdConfig& cfg) {
  if (grads.size() != params.size() || (!bufs.empty() && bufs.size() != params.size()))
    fail(Code::Arg, "sgdStep: params, grads and momentum buffers must have equal lengths");
  check_params(params, masters, "sgdStep");
  check_list(params, grads, false, "sgdStep", "grad");
  if (!bufs.empty()) check_list(params, bufs, true, "sgdStep", "momentum buffer");
  if (params.empty()) return;
  const Device dev = params[0].device();
  auto kernel = sgd_step_table().get(dev);
  enqueue(
      "sgdStep", dev, [=]() mutable { kernel(params, grads, bufs, masters, cfg); }, 3 * total_numel(params));
}

void rmsprop_step(std::vector<Tensor> params, std::vector<Tensor> grads, std::vector<Tensor> square_avg,
                  std::vector<Tensor> grad_avg, std::vector<Tensor> bufs, std::vector<Tensor> masters, const RmspropConfig& cfg) {
  const char* op = "rmspropStep";
  if (grads.size() != params.size() || square_avg.size() != params.size())
    fail(Code::Arg, op, ": params, grads and square_avg must have equal lengths");
  if (grad_avg.size() != (cfg.centered ? params.size() : 0))
    fail(Code::Arg, op, ": centered needs one grad_avg per param (and none without it), got ", grad_avg.size(), " for ",
         params.size());
  if (bufs.size() != (cfg.momentum > 0 ? params.size() : 0))
    fail(Code::Arg, op, ": momentum > 0 needs one momentum buffer per param (and none without it), got ", bufs.size(), " for ",
         params.size());
  check_params(params, masters, op);
  check_list(params, grads, false, op, "grad");
  check_list(params, square_avg, true, op, "square_avg");
  if (cfg.centered) check_list(params, grad_avg, true, op, "grad_avg");
  if (cfg.momentum > 0) check_list(params, bufs, true, op, "momentum buffer");
  if (params.empty()) return;
  const Device dev = params[0].device();
  auto kernel = rmsprop_step_table().get(dev);
  enqueue(
      op, dev, [=]() mutable { kernel(params, grads, square_avg, grad_avg, bufs, masters, cfg); }, 6 * total_numel(params));
}

void adagrad_step(std::vector<Tensor> params, std::vector<Tensor> grads, std::vector<Tensor> sums, std::vector<Tensor> masters,
                  const AdagradConfig& cfg) {
  const char* op = "adagradStep";
  if (grads.size() != params.size() || sums.size() != params.size())
    fail(Code::Arg, op, ": params, grads and sums must have equal lengths");
  if (cfg.step < 1) fail(Code::Arg, op, ": step must be ≥ 1, got ", cfg.step);
  check_params(params, masters, op);
  check_list(params, grads, false, op, "grad");
  check_list(params, sums, true, op, "sum");
  if (params.empty()) return;
  const Device dev = params[0].device();
  auto kernel = adagrad_step_table().get(dev);
  enqueue(
      op, dev, [=]() mutable { kernel(params, grads, sums, masters, cfg); }, 4 * total_numel(params));
}

}  // namespace flock::ops
