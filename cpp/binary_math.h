// The binary ops' scalar formulas (arithmetic and comparisons), shared by the CPU and CUDA
// kernels, so both backends compute the same thing. The unary ops' are in scalar_math.h.
#pragma once
#include <cmath>
#include <type_traits>
#include "host_device.h"
#include "generated/binary_codes.h"

namespace flock::math {

template <class T>
FLOCK_HD T binary(BinaryOp op, T x, T y) {
  switch (op) {
    case BinaryOp::add:
      return x + y;
    case BinaryOp::sub:
      return x - y;
    case BinaryOp::mul:
      return x * y;
    case BinaryOp::div:
      return x / y;
    case BinaryOp::pow:
      return static_cast<T>(std::pow(x, y));
    case BinaryOp::maximum:
      return (x != x) ? x : (x > y ? x : y);  // NaN propagates, as in torch.maximum
    case BinaryOp::minimum:
      return (x != x) ? x : (x < y ? x : y);
    case BinaryOp::hypot: {  // integer operands (never sent: the op promotes them) compute in double
      using F = std::conditional_t<std::is_integral_v<T>, double, T>;
      return static_cast<T>(std::hypot(static_cast<F>(x), static_cast<F>(y)));
    }
    default:
      return T(0);
  }
}

template <class T>
FLOCK_HD bool compare(BinaryOp op, T x, T y) {
  switch (op) {
    case BinaryOp::eq:
      return x == y;
    case BinaryOp::ne:
      return x != y;
    case BinaryOp::lt:
      return x < y;
    case BinaryOp::le:
      return x <= y;
    case BinaryOp::gt:
      return x > y;
    case BinaryOp::ge:
      return x >= y;
    case BinaryOp::logical_and:
      return (x != T(0)) && (y != T(0));
    case BinaryOp::logical_or:
      return (x != T(0)) || (y != T(0));
    default:
      return false;
  }
}

}  // namespace flock::math
