// Winograd F(2×2, 3×3) for f32 3×3 stride-1 convolutions (cpp/cpu/conv_winograd.cc): 16 GEMMs of
// [OC, C] · [C, tiles] in the transformed domain replace one [OC, 9C] · [9C, OH·OW] GEMM, 2.25×
// fewer multiplications, at the price of transforming inputs and outputs. conv.cc chooses it per shape.
#pragma once
#include "../nn_kernels.h"

namespace flock::cpu {

// groups 1, 3×3, stride 1, dilation 1, padding at most 2 (so the input gradient is one too).
bool winograd_applies(const Conv2dGeom& g);

// y = conv2d(x, w) + bias (bias may be null), NCHW.
void winograd_forward(const float* x, const float* w, const float* bias, float* y, const Conv2dGeom& g);

// gx = the input gradient of conv2d for output gradient gy: a full 3×3 convolution of gy with the
// flipped, channel-transposed kernel, padding 2 − p.
void winograd_backward_input(const float* gy, const float* w, float* gx, const Conv2dGeom& g);

}  // namespace flock::cpu
