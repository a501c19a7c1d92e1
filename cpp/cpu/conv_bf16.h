// bf16 convolution kernels for CPUs with AVX512_BF16 (cpp/cpu/conv_bf16.cc): the conv front ends
// (cpp/ops/nn.cc) use them for bf16 tensors on the CPU when conv2d_bf16_available(), and widen to
// the f32 kernels otherwise. Same signatures as the conv2d families in nn_kernels.h.
#pragma once
#include "../nn_kernels.h"

namespace flock {

FLOCK_DECLARE_KERNEL(conv2d_forward_bf16,
                     void(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y, const Conv2dGeom& g))
FLOCK_DECLARE_KERNEL(conv2d_backward_input_bf16, void(const Tensor& gy, const Tensor& w, Tensor& gx, const Conv2dGeom& g))
FLOCK_DECLARE_KERNEL(conv2d_backward_weight_bf16, void(const Tensor& x, const Tensor& gy, Tensor& gw, const Conv2dGeom& g))

namespace cpu {
// Whether this CPU runs the bf16 kernels above (AVX512_BF16, detected at load).
bool conv2d_bf16_available();
}  // namespace cpu

}  // namespace flock
