// The fused epilogue of a linear layer: y = act(x + bias) over a contiguous [rows, n] x with a
// bias of [n], one pass over memory instead of an add and an activation. Same registration
// scheme as kernels.h; the activations reuse scalar_math.h's formulas.
#pragma once
#include "kernels.h"
#include "generated/unary_codes.h"
#include "generated/bias_act_codes.h"

namespace flock {

// BiasAct (none, relu, ...) is generated from the manifest with the other op codes (kernels.h).

// The element-wise op each activation applies (none applies none: the caller skips it).
constexpr UnaryOp bias_act_unary(BiasAct a) {
  switch (a) {
    case BiasAct::relu:
      return UnaryOp::relu;
    case BiasAct::gelu:
      return UnaryOp::gelu;
    case BiasAct::gelu_tanh:
      return UnaryOp::gelu_tanh;
    case BiasAct::silu:
      return UnaryOp::silu;
    case BiasAct::tanh:
      return UnaryOp::tanh;
    case BiasAct::sigmoid:
      return UnaryOp::sigmoid;
    default:
      return UnaryOp::count;
  }
}

FLOCK_DECLARE_KERNEL(bias_act, void(const Tensor& x, const Tensor& bias, Tensor& y, BiasAct act))
// gx = gy · act'(pre) with pre = saved + bias, or pre = saved when bias is null. relu may pass its
// output as `saved` with no bias: the output is positive exactly where the pre-activation is.
FLOCK_DECLARE_KERNEL(bias_act_backward, void(const Tensor& gy, const Tensor& saved, const Tensor* bias, Tensor& gx, BiasAct act))

}  // namespace flock
