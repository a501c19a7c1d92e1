// Front ends of the fused bias + activation: dtype, device and shape checks that name the shapes,
// then one queued kernel.
#include "nn.h"
#include "ops.h"
#include "../generated/bias_act_codes.h"

namespace flock::ops {
namespace {

void check_operand(const Tensor& x, const Tensor& t, const char* op, const char* name) {
  check_same_device(x, t, op);
  if (t.dtype != x.dtype) fail(Code::DType, op, ": ", name, " is ", dtype_name(t.dtype), ", input is ", dtype_name(x.dtype));
}

void check_bias(const Tensor& x, const Tensor& bias, const char* op, bool any_dtype = false) {
  if (any_dtype)
    check_same_device(x, bias, op);
  else
    check_operand(x, bias, op, "bias");
  if (bias.dim() != 1 || bias.shape[0] != x.shape[1])
    fail(Code::Shape, op, ": bias ", shape_str(bias.shape), " does not match input ", shape_str(x.shape), " (expected [",
         x.shape[1], "])");
}

void check_input(const Tensor& x, BiasAct act, const char* op) {
  if (act < BiasAct::none || act >= BiasAct::count) fail(Code::Arg, op, ": unknown activation");
  if (!is_floating(x.dtype)) fail(Code::DType, op, ": expected a floating dtype, got ", dtype_name(x.dtype));
  if (x.dim() != 2) fail(Code::Shape, op, ": input must be 2-D [rows, n], got ", shape_str(x.shape));
}

// The work estimate for enqueue: gelu, silu, tanh and sigmoid call a math function per element.
int64_t act_work(BiasAct act, int64_t n) { return act == BiasAct::none || act == BiasAct::relu ? n : n * kSlowElement; }

}  // namespace

Tensor bias_act(const Tensor& x, const Tensor& bias, BiasAct act, bool in_place) {
  check_input(x, act, "biasAct");
  // An f32 bias may go with a bf16/f16 input on the CPU (rounded there as a cast would round it).
  const bool f32_bias = bias.dtype == DType::f32 && (x.dtype == DType::bf16 || x.dtype == DType::f16);
  if (f32_bias && !x.device().is_cpu())
    fail(Code::DType, "biasAct: an f32 bias with a ", dtype_name(x.dtype), " input runs on the CPU only, got ", x.device().str());
  check_bias(x, bias, "biasAct", f32_bias);
  // In place, each element is read and then written by the same thread: the kernels allow it.
  Tensor y = in_place ? x : empty(x.shape, x.dtype, x.device(), "biasAct");
  auto kernel = bias_act_table().get(x.device());
  if (y.numel() > 0)
    enqueue(
        "biasAct", x.device(), [=]() mutable { kernel(x, bias, y, act); }, act_work(act, y.numel()));
  return y;
}

Tensor bias_act_backward(const Tensor& gy, const Tensor& saved, const Tensor* bias, BiasAct act) {
  check_input(gy, act, "biasActBackward");
  check_operand(gy, saved, "biasActBackward", "saved");
  if (saved.shape != gy.shape)
    fail(Code::Shape, "biasActBackward: saved ", shape_str(saved.shape), " and grad ", shape_str(gy.shape), " differ");
  Tensor b;
  const bool has_bias = bias != nullptr;
  if (has_bias) {
    check_bias(gy, *bias, "biasActBackward");
    b = *bias;
  }
  Tensor gx = empty(gy.shape, gy.dtype, gy.device(), "biasActBackward");
  auto kernel = bias_act_backward_table().get(gy.device());
  if (gx.numel() > 0)
    enqueue(
        "biasActBackward", gy.device(), [=]() mutable { kernel(gy, saved, has_bias ? &b : nullptr, gx, act); },
        act_work(act, gx.numel()));
  return gx;
}

}  // namespace flock::ops
