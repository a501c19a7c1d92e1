// Neural-network op front ends: shape arithmetic of convolution and pooling, checks that name the
// op and the shapes, and the enqueueing of the nn kernels on the device stream.
#include "nn.h"
#include "ops.h"

namespace flock::ops {
namespace {

void check_float(const Tensor& t, const char* op, const char* name) {
  if (t.dtype != DType::f32 && t.dtype != DType::f64)
    fail(Code::DType, op, ": ", name, " must be f32 or f64, got ", dtype_name(t.dtype));
}

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
    fail(Code::Shape, op, ": weight ", shape_str(ws), " expects ", ws[1] * g.groups, " input channels, input ", shape_str(xs), " has ", g.c);
  g.oh = (g.h + 2 * g.ph - g.dh * (g.kh - 1) - 1) / g.sh + 1;
  g.ow = (g.w + 2 * g.pw - g.dw * (g.kw - 1) - 1) / g.sw + 1;
  if (g.h + 2 * g.ph < g.dh * (g.kh - 1) + 1 || g.w + 2 * g.pw < g.dw * (g.kw - 1) + 1)
    fail(Code::Shape, op, ": kernel ", g.kh, "x", g.kw, " (dilation ", g.dh, "x", g.dw, ") is larger than the padded input ", shape_str(xs));
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
  auto kernel = conv2d_forward_table().get(x.device());
  launch("conv2d", x.device(), [=]() mutable { kernel(x, w, has_bias ? &b : nullptr, y, g); });
  return y;
}

Tensor conv2d_backward_input(const Tensor& gy, const Tensor& w, const Shape& input_shape, const Conv2dArgs& a) {
  check_float(gy, "conv2dBackwardInput", "grad");
  check_pair(gy, w, "conv2dBackwardInput");
  const Conv2dGeom g = conv_geom(input_shape, w.shape, a, "conv2dBackwardInput");
  check_shape(gy, {g.n, g.oc, g.oh, g.ow}, "conv2dBackwardInput", "grad");
  Tensor gx = empty(input_shape, gy.dtype, gy.device(), "conv2dBackwardInput");
  if (gx.numel() == 0) return gx;
  auto kernel = conv2d_backward_input_table().get(gy.device());
  launch("conv2dBackwardInput", gy.device(), [=]() mutable { kernel(gy, w, gx, g); });
  return gx;
}

Tensor conv2d_backward_weight(const Tensor& x, const Tensor& gy, const Shape& weight_shape, const Conv2dArgs& a) {
  check_float(x, "conv2dBackwardWeight", "input");
  check_pair(x, gy, "conv2dBackwardWeight");
  const Conv2dGeom g = conv_geom(x.shape, weight_shape, a, "conv2dBackwardWeight");
  check_shape(gy, {g.n, g.oc, g.oh, g.ow}, "conv2dBackwardWeight", "grad");
  Tensor gw = empty(weight_shape, x.dtype, x.device(), "conv2dBackwardWeight");
  if (gw.numel() == 0) return gw;
  auto kernel = conv2d_backward_weight_table().get(x.device());
  launch("conv2dBackwardWeight", x.device(), [=]() mutable { kernel(x, gy, gw, g); });
  return gw;
}

std::vector<Tensor> max_pool2d_forward(const Tensor& x, const Pool2dArgs& a) {
  check_float(x, "maxPool2d", "input");
  const Pool2dGeom g = pool_geom(x.shape, a, "maxPool2d");
  Tensor y = empty({g.n, g.c, g.oh, g.ow}, x.dtype, x.device(), "maxPool2d");
  Tensor idx = empty({g.n, g.c, g.oh, g.ow}, DType::i64, x.device(), "maxPool2d");
  auto kernel = max_pool2d_forward_table().get(x.device());
  if (y.numel() > 0) launch("maxPool2d", x.device(), [=]() mutable { kernel(x, y, idx, g); });
  return {y, idx};
}

Tensor max_pool2d_backward(const Tensor& gy, const Tensor& indices, const Shape& input_shape, const Pool2dArgs& a) {
  check_float(gy, "maxPool2dBackward", "grad");
  check_same_device(gy, indices, "maxPool2dBackward");
  if (indices.dtype != DType::i64) fail(Code::DType, "maxPool2dBackward: indices must be i64, got ", dtype_name(indices.dtype));
  const Pool2dGeom g = pool_geom(input_shape, a, "maxPool2dBackward");
  check_shape(gy, {g.n, g.c, g.oh, g.ow}, "maxPool2dBackward", "grad");
  check_shape(indices, gy.shape, "maxPool2dBackward", "indices");
  Tensor gx = empty(input_shape, gy.dtype, gy.device(), "maxPool2dBackward");
  auto kernel = max_pool2d_backward_table().get(gy.device());
  if (gx.numel() > 0) launch("maxPool2dBackward", gy.device(), [=]() mutable { kernel(gy, indices, gx, g); });
  return gx;
}

Tensor avg_pool2d_forward(const Tensor& x, const Pool2dArgs& a) {
  check_float(x, "avgPool2d", "input");
  const Pool2dGeom g = pool_geom(x.shape, a, "avgPool2d");
  Tensor y = empty({g.n, g.c, g.oh, g.ow}, x.dtype, x.device(), "avgPool2d");
  auto kernel = avg_pool2d_forward_table().get(x.device());
  if (y.numel() > 0) launch("avgPool2d", x.device(), [=]() mutable { kernel(x, y, g, false); });
  return y;
}

Tensor avg_pool2d_backward(const Tensor& gy, const Shape& input_shape, const Pool2dArgs& a) {
  check_float(gy, "avgPool2dBackward", "grad");
  const Pool2dGeom g = pool_geom(input_shape, a, "avgPool2dBackward");
  check_shape(gy, {g.n, g.c, g.oh, g.ow}, "avgPool2dBackward", "grad");
  Tensor gx = empty(input_shape, gy.dtype, gy.device(), "avgPool2dBackward");
  auto kernel = avg_pool2d_backward_table().get(gy.device());
  if (gx.numel() > 0) launch("avgPool2dBackward", gy.device(), [=]() mutable { kernel(gy, gx, g, false); });
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
  const Pool2dGeom g = adaptive_geom(x.shape, oh, ow, "adaptiveAvgPool2d");
  Tensor y = empty({g.n, g.c, oh, ow}, x.dtype, x.device(), "adaptiveAvgPool2d");
  auto kernel = avg_pool2d_forward_table().get(x.device());
  if (y.numel() > 0) launch("adaptiveAvgPool2d", x.device(), [=]() mutable { kernel(x, y, g, true); });
  return y;
}

Tensor adaptive_avg_pool2d_backward(const Tensor& gy, const Shape& input_shape) {
  check_float(gy, "adaptiveAvgPool2dBackward", "grad");
  if (gy.dim() != 4) fail(Code::Shape, "adaptiveAvgPool2dBackward: grad must be 4-D, got ", shape_str(gy.shape));
  const Pool2dGeom g = adaptive_geom(input_shape, gy.shape[2], gy.shape[3], "adaptiveAvgPool2dBackward");
  check_shape(gy, {g.n, g.c, g.oh, g.ow}, "adaptiveAvgPool2dBackward", "grad");
  Tensor gx = empty(input_shape, gy.dtype, gy.device(), "adaptiveAvgPool2dBackward");
  auto kernel = avg_pool2d_backward_table().get(gy.device());
  if (gx.numel() > 0) launch("adaptiveAvgPool2dBackward", gy.device(), [=]() mutable { kernel(gy, gx, g, true); });
  return gx;
}

namespace {
void check_ce(const Tensor& logits, const Tensor& target, const char* op) {
  check_float(logits, op, "input");
  check_same_device(logits, target, op);
  if (logits.dim() != 2) fail(Code::Shape, op, ": input must be [rows, classes], got ", shape_str(logits.shape));
  if (target.dtype != DType::i64 && target.dtype != DType::i32) fail(Code::DType, op, ": target must be i64 or i32 class indices, got ", dtype_name(target.dtype));
  if (target.dim() != 1 || target.shape[0] != logits.shape[0])
    fail(Code::Shape, op, ": target ", shape_str(target.shape), " must be [", logits.shape[0], "] for input ", shape_str(logits.shape));
  if (logits.shape[1] == 0) fail(Code::Shape, op, ": input has no classes");
}
}  // namespace

std::vector<Tensor> cross_entropy_forward(const Tensor& logits, const Tensor& target, int64_t ignore_index, double smoothing) {
  check_ce(logits, target, "crossEntropy");
  Tensor loss = empty({logits.shape[0]}, logits.dtype, logits.device(), "crossEntropy");
  Tensor lse = empty({logits.shape[0]}, logits.dtype, logits.device(), "crossEntropy");
  auto kernel = cross_entropy_forward_table().get(logits.device());
  if (logits.shape[0] > 0)
    launch("crossEntropy", logits.device(), [=]() mutable { kernel(logits, target, loss, lse, ignore_index, smoothing); });
  return {loss, lse};
}

Tensor cross_entropy_backward(const Tensor& logits, const Tensor& target, const Tensor& lse, const Tensor& gloss, int64_t ignore_index, double smoothing) {
  check_ce(logits, target, "crossEntropyBackward");
  check_pair(logits, gloss, "crossEntropyBackward");
  check_shape(gloss, {logits.shape[0]}, "crossEntropyBackward", "grad");
  check_shape(lse, {logits.shape[0]}, "crossEntropyBackward", "lse");
  Tensor gx = empty(logits.shape, logits.dtype, logits.device(), "crossEntropyBackward");
  auto kernel = cross_entropy_backward_table().get(logits.device());
  if (gx.numel() > 0)
    launch("crossEntropyBackward", logits.device(), [=]() mutable { kernel(logits, target, lse, gloss, gx, ignore_index, smoothing); });
  return gx;
}

std::vector<Tensor> row_norm_forward(const Tensor& x, double eps) {
  check_float(x, "rowNorm", "input");
  if (x.dim() != 2) fail(Code::Shape, "rowNorm: input must be [rows, d], got ", shape_str(x.shape));
  if (!(eps >= 0)) fail(Code::Range, "rowNorm: eps must be ≥ 0, got ", eps);
  Tensor y = empty(x.shape, x.dtype, x.device(), "rowNorm");
  Tensor mean = empty({x.shape[0]}, x.dtype, x.device(), "rowNorm");
  Tensor rstd = empty({x.shape[0]}, x.dtype, x.device(), "rowNorm");
  auto kernel = row_norm_forward_table().get(x.device());
  if (x.numel() > 0) launch("rowNorm", x.device(), [=]() mutable { kernel(x, y, mean, rstd, eps); });
  return {y, mean, rstd};
}

Tensor row_norm_backward(const Tensor& x, const Tensor& mean, const Tensor& rstd, const Tensor& gy) {
  check_float(x, "rowNormBackward", "input");
  check_pair(x, gy, "rowNormBackward");
  check_pair(x, mean, "rowNormBackward");
  check_pair(x, rstd, "rowNormBackward");
  if (x.dim() != 2) fail(Code::Shape, "rowNormBackward: input must be [rows, d], got ", shape_str(x.shape));
  check_shape(gy, x.shape, "rowNormBackward", "grad");
  check_shape(mean, {x.shape[0]}, "rowNormBackward", "mean");
  check_shape(rstd, {x.shape[0]}, "rowNormBackward", "rstd");
  Tensor gx = empty(x.shape, x.dtype, x.device(), "rowNormBackward");
  auto kernel = row_norm_backward_table().get(x.device());
  if (x.numel() > 0) launch("rowNormBackward", x.device(), [=]() mutable { kernel(x, mean, rstd, gy, gx); });
  return gx;
}

namespace {
void check_group(const std::vector<Tensor>& params, const std::vector<const std::vector<Tensor>*>& others, const char* op) {
  if (params.empty()) return;
  const Device dev = params[0].device();
  for (size_t k = 0; k < params.size(); ++k) {
    check_float(params[k], op, "params");
    if (params[k].device() != dev) fail(Code::Device, op, ": all params of one call must be on one device");
    for (const auto* list : others) {
      const Tensor& t = (*list)[k];
      if (t.dtype != params[k].dtype || t.device() != dev || t.shape != params[k].shape)
        fail(Code::Shape, op, ": state/grad tensor ", k, " ", shape_str(t.shape), " ", dtype_name(t.dtype), " does not match param ",
             shape_str(params[k].shape), " ", dtype_name(params[k].dtype));
    }
  }
}
}  // namespace

void adam_step(std::vector<Tensor> params, std::vector<Tensor> grads, std::vector<Tensor> m, std::vector<Tensor> v, std::vector<Tensor> max_v,
               const AdamConfig& cfg) {
  if (grads.size() != params.size() || m.size() != params.size() || v.size() != params.size())
    fail(Code::Arg, "adamStep: params, grads, exp_avg and exp_avg_sq must have equal lengths");
  if (max_v.size() != (cfg.amsgrad ? params.size() : 0))
    fail(Code::Arg, "adamStep: amsgrad needs one max_exp_avg_sq per param (and none without it), got ", max_v.size(), " for ", params.size());
  if (cfg.amsgrad) check_group(params, {&grads, &m, &v, &max_v}, "adamStep");
  else check_group(params, {&grads, &m, &v}, "adamStep");
  if (params.empty()) return;
  const Device dev = params[0].device();
  auto kernel = adam_step_table().get(dev);
  launch("adamStep", dev, [=]() mutable { kernel(params, grads, m, v, max_v, cfg); });
}

void sgd_step(std::vector<Tensor> params, std::vector<Tensor> grads, std::vector<Tensor> bufs, const SgdConfig& cfg) {
  if (grads.size() != params.size() || (!bufs.empty() && bufs.size() != params.size()))
    fail(Code::Arg, "sgdStep: params, grads and momentum buffers must have equal lengths");
  check_group(params, bufs.empty() ? std::vector<const std::vector<Tensor>*>{&grads} : std::vector<const std::vector<Tensor>*>{&grads, &bufs}, "sgdStep");
  if (params.empty()) return;
  const Device dev = params[0].device();
  auto kernel = sgd_step_table().get(dev);
  launch("sgdStep", dev, [=]() mutable { kernel(params, grads, bufs, cfg); });
}

}  // namespace flock::ops
