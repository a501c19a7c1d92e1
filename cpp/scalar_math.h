// The unary ops' scalar formulas, shared by the CPU and CUDA kernels, so both backends compute the
// same thing: each op's value and its derivative (d out / d x, given x). The binary ops' are in
// binary_math.h, so a new code of either family recompiles only its own kernels.
#pragma once
#include <cmath>
#include "kernels.h"
#include "host_device.h"
#include "generated/unary_codes.h"

namespace flock::math {

template <class T>
FLOCK_HD T sigmoid(T x) {
  return T(1) / (T(1) + std::exp(-x));
}

template <class T>
FLOCK_HD T unary(UnaryOp op, T x, T a, T b) {
  constexpr T kSqrt1_2 = T(0.70710678118654752440);
  constexpr T kSqrt2OverPi = T(0.79788456080286535588);
  switch (op) {
    case UnaryOp::neg:
      return -x;
    case UnaryOp::exp:
      return std::exp(x);
    case UnaryOp::log:
      return std::log(x);
    case UnaryOp::sqrt:
      return std::sqrt(x);
    case UnaryOp::rsqrt:
      return T(1) / std::sqrt(x);
    case UnaryOp::abs:
      return std::fabs(x);
    case UnaryOp::sign:
      return x > T(0) ? T(1) : (x < T(0) ? T(-1) : T(0));
    case UnaryOp::tanh:
      return std::tanh(x);
    case UnaryOp::sigmoid:
      return sigmoid(x);
    case UnaryOp::relu:
      return x < T(0) ? T(0) : x;  // NaN propagates (and -0 stays -0), as torch.relu
    case UnaryOp::gelu:
      return T(0.5) * x * (T(1) + std::erf(x * kSqrt1_2));
    case UnaryOp::gelu_tanh:
      return T(0.5) * x * (T(1) + std::tanh(kSqrt2OverPi * (x + T(0.044715) * x * x * x)));
    case UnaryOp::silu:
      return x * sigmoid(x);
    case UnaryOp::clamp:
      return x < a ? a : (x > b ? b : x);
    case UnaryOp::leaky_relu:
      return x > T(0) ? x : a * x;
    case UnaryOp::logical_not:
      return x == T(0) ? T(1) : T(0);
    case UnaryOp::square:
      return x * x;
    case UnaryOp::reciprocal:
      return T(1) / x;
    case UnaryOp::sin:
      return std::sin(x);
    case UnaryOp::cos:
      return std::cos(x);
    case UnaryOp::erf:
      return std::erf(x);
    case UnaryOp::floor:
      return std::floor(x);
    case UnaryOp::ceil:
      return std::ceil(x);
    case UnaryOp::round:
      return std::nearbyint(x);
    case UnaryOp::log1p:
      return std::log1p(x);
    case UnaryOp::expm1:
      return std::expm1(x);
    case UnaryOp::pow_scalar:
      return std::pow(x, a);
    case UnaryOp::atan:
      return std::atan(x);
    case UnaryOp::log2:
      return std::log2(x);
    default:
      return x;
  }
}

template <class T>
FLOCK_HD T unary_derivative(UnaryOp op, T x, T a, T b) {
  constexpr T kSqrt1_2 = T(0.70710678118654752440);
  constexpr T kInvSqrt2Pi = T(0.39894228040143267794);
  constexpr T kSqrt2OverPi = T(0.79788456080286535588);
  constexpr T k2OverSqrtPi = T(1.12837916709551257390);
  switch (op) {
    case UnaryOp::neg:
      return T(-1);
    case UnaryOp::exp:
      return std::exp(x);
    case UnaryOp::log:
      return T(1) / x;
    case UnaryOp::sqrt:
      return T(0.5) / std::sqrt(x);
    case UnaryOp::rsqrt:
      return T(-0.5) / (x * std::sqrt(x));
    case UnaryOp::abs:
      return x > T(0) ? T(1) : (x < T(0) ? T(-1) : T(0));
    case UnaryOp::tanh: {
      T t = std::tanh(x);
      return T(1) - t * t;
    }
    case UnaryOp::sigmoid: {
      T s = sigmoid(x);
      return s * (T(1) - s);
    }
    // 0 where x <= 0, else 1: at NaN the gradient passes, as torch's threshold_backward. The same
    // test on relu's output gives the same answer, which the fused bias + relu backward relies on.
    case UnaryOp::relu:
      return x <= T(0) ? T(0) : T(1);
    case UnaryOp::gelu:
      return T(0.5) * (T(1) + std::erf(x * kSqrt1_2)) + x * kInvSqrt2Pi * std::exp(T(-0.5) * x * x);
    case UnaryOp::gelu_tanh: {
      T u = kSqrt2OverPi * (x + T(0.044715) * x * x * x);
      T t = std::tanh(u);
      return T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * kSqrt2OverPi * (T(1) + T(3 * 0.044715) * x * x);
    }
    case UnaryOp::silu: {
      T s = sigmoid(x);
      return s * (T(1) + x * (T(1) - s));
    }
    case UnaryOp::clamp:
      return (x >= a && x <= b) ? T(1) : T(0);
    case UnaryOp::leaky_relu:
      return x > T(0) ? T(1) : a;
    case UnaryOp::square:
      return T(2) * x;
    case UnaryOp::reciprocal:
      return T(-1) / (x * x);
    case UnaryOp::sin:
      return std::cos(x);
    case UnaryOp::cos:
      return -std::sin(x);
    case UnaryOp::erf:
      return k2OverSqrtPi * std::exp(-x * x);
    case UnaryOp::log1p:
      return T(1) / (T(1) + x);
    case UnaryOp::expm1:
      return std::exp(x);
    // x^0 is constant: 0 everywhere, also at x = 0 where a * x^(a-1) would be 0 * inf (torch: 0).
    case UnaryOp::pow_scalar:
      return a == T(0) ? T(0) : a * std::pow(x, a - T(1));
    case UnaryOp::atan:
      return T(1) / (T(1) + x * x);
    case UnaryOp::log2:
      return T(1) / (x * T(0.69314718055994530942));  // 1 / (x ln 2)
    default:
      return T(0);  // sign, floor, ceil, round, logical_not: piecewise constant
  }
}

// The bool-valued unary ops (unary_is_predicate); x is a floating value in its compute type.
template <class T>
FLOCK_HD bool predicate(UnaryOp op, T x) {
  switch (op) {
    case UnaryOp::isnan:
      return x != x;
    case UnaryOp::isinf:
      return x - x != x - x && x == x;  // inf - inf is NaN; NaN itself is excluded
    case UnaryOp::isfinite:
      return x - x == x - x;
    default:
      return false;
  }
}

}  // namespace flock::math
