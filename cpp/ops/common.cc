#include <algorithm>
#include "../context.h"
#include "ops.h"
#include "../generated/unary_codes.h"
#include "../generated/binary_codes.h"

namespace flock::ops {

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  const size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t y = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (x != y && x != 1 && y != 1)
      fail(Code::Shape, op, ": shapes ", shape_str(a), " and ", shape_str(b), " cannot be broadcast together");
    out[i] = x == 1 ? y : x;
  }
  return out;
}

int64_t normalize_dim(int64_t dim, int64_t ndim, const char* op) {
  const int64_t n = std::max<int64_t>(ndim, 1);
  if (dim < -n || dim >= n) fail(Code::Index, op, ": dim ", dim, " is out of range for a tensor of ", ndim, " dimensions");
  return dim < 0 ? dim + n : dim;
}

void check_same_device(const Tensor& a, const Tensor& b, const char* op) {
  if (a.device() != b.device())
    fail(Code::Device, op, ": tensors are on different devices (", a.device().str(), " and ", b.device().str(), ")");
}

void enqueue(const char* op, Device device, std::function<void()> work) {
  Context::current().stream(device).enqueue(op, std::move(work));
}

int64_t unary_work(UnaryOp op, int64_t n) {
  switch (op) {
    case UnaryOp::isnan:
    case UnaryOp::isinf:
    case UnaryOp::isfinite:
    case UnaryOp::neg:
    case UnaryOp::abs:
    case UnaryOp::sign:
    case UnaryOp::relu:
    case UnaryOp::clamp:
    case UnaryOp::leaky_relu:
    case UnaryOp::square:
    case UnaryOp::floor:
    case UnaryOp::ceil:
    case UnaryOp::round:
    case UnaryOp::logical_not:
      return n;
    default:
      return n * kSlowElement;
  }
}

int64_t binary_work(BinaryOp op, int64_t n) { return op == BinaryOp::pow || op == BinaryOp::hypot ? n * kSlowElement : n; }

bool enqueue_inline(const char* op, Device device, const std::function<void()>& work) {
  return Context::current().stream(device).run_inline(op, work);
}

}  // namespace flock::ops
