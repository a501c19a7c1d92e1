// Element-wise front ends: unary (and derivative), binary with broadcasting, where, casts, copies.
#include "../context.h"
#include "ops.h"
#include "../generated/unary_codes.h"
#include "../generated/binary_codes.h"

namespace flock::ops {
namespace {

bool unary_needs_float(UnaryOp op) {
  switch (op) {
    case UnaryOp::neg:
    case UnaryOp::abs:
    case UnaryOp::sign:
    case UnaryOp::relu:
    case UnaryOp::clamp:
    case UnaryOp::square:
      return false;
    default:
      return true;
  }
}

}  // namespace

Tensor unary(UnaryOp op, const Tensor& x, double a, double b) {
  if (op >= UnaryOp::count) fail(Code::Arg, "unary: unknown op");
  if (unary_is_predicate(op) && !is_floating(x.dtype))  // integers and bools are never NaN or infinite
    return full(x.shape, DType::boolean, x.device(), op == UnaryOp::isfinite ? 1.0 : 0.0);
  if (x.dtype == DType::boolean) fail(Code::DType, "unary: not defined for bool tensors");
  if (unary_needs_float(op) && !is_floating(x.dtype))
    fail(Code::DType, "unary: this op needs a floating dtype, got ", dtype_name(x.dtype), " of shape ", shape_str(x.shape));
  Tensor out = empty(x.shape, unary_is_predicate(op) ? DType::boolean : x.dtype, x.device(), "unary");
  auto kernel = unary_table().get(x.device());
  enqueue(
      "unary", x.device(), [op, x, out, a, b, kernel]() mutable { kernel(op, x, out, a, b); }, unary_work(op, out.numel()));
  return out;
}

Tensor unary_backward(UnaryOp op, const Tensor& x, const Tensor& gy, double a, double b) {
  if (op >= UnaryOp::count) fail(Code::Arg, "unary_backward: unknown op");
  if (unary_is_predicate(op)) fail(Code::Arg, "unary_backward: isnan, isinf and isfinite have no derivative");
  check_same_device(x, gy, "unary_backward");
  if (!is_floating(x.dtype) || x.dtype != gy.dtype)
    fail(Code::DType, "unary_backward: expected matching floating dtypes, got ", dtype_name(x.dtype), " and ",
         dtype_name(gy.dtype));
  if (x.shape != gy.shape)
    fail(Code::Shape, "unary_backward: input ", shape_str(x.shape), " and gradient ", shape_str(gy.shape), " differ");
  Tensor gx = empty(x.shape, x.dtype, x.device(), "unary_backward");
  auto kernel = unary_backward_table().get(x.device());
  enqueue(
      "unary_backward", x.device(), [=]() mutable { kernel(op, x, gy, gx, a, b); }, unary_work(op, gx.numel()));
  return gx;
}

Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b) {
  if (op >= BinaryOp::count) fail(Code::Arg, "binary: unknown op");
  check_same_device(a, b, "binary");
  if (a.dtype != b.dtype)
    fail(Code::DType, "binary: dtypes ", dtype_name(a.dtype), " and ", dtype_name(b.dtype), " differ (shapes ",
         shape_str(a.shape), " and ", shape_str(b.shape), ")");
  if (!binary_is_comparison(op) && a.dtype == DType::boolean)
    fail(Code::DType, "binary: arithmetic is not defined for bool tensors");
  Shape shape = broadcast_shapes(a.shape, b.shape, "binary");
  Tensor out = empty(shape, binary_is_comparison(op) ? DType::boolean : a.dtype, a.device(), "binary");
  auto kernel = binary_table().get(a.device());
  enqueue(
      "binary", a.device(), [op, a, b, out, kernel]() mutable { kernel(op, a, b, out); }, binary_work(op, out.numel()));
  return out;
}

bool binary_(BinaryOp op, Tensor& self, const Tensor& b) {
  if (op >= BinaryOp::count) fail(Code::Arg, "binary_: unknown op");
  if (binary_is_comparison(op)) fail(Code::Arg, "binary_: a comparison's bool result cannot be written into its input");
  check_same_device(self, b, "binary_");
  if (self.dtype != b.dtype)
    fail(Code::DType, "binary_: dtypes ", dtype_name(self.dtype), " and ", dtype_name(b.dtype), " differ (shapes ",
         shape_str(self.shape), " and ", shape_str(b.shape), ")");
  if (self.dtype == DType::boolean) fail(Code::DType, "binary_: arithmetic is not defined for bool tensors");
  if (broadcast_shapes(self.shape, b.shape, "binary_") != self.shape)
    fail(Code::Shape, "binary_: shape ", shape_str(b.shape), " does not broadcast to self's shape ", shape_str(self.shape));
  if (self.storage == b.storage && (self.offset != b.offset || self.shape != b.shape)) return false;
  Tensor out = self;
  auto kernel = binary_table().get(self.device());
  enqueue(
      "binary_", self.device(), [op, self, b, out, kernel]() mutable { kernel(op, self, b, out); }, binary_work(op, out.numel()));
  return true;
}

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  check_same_device(cond, a, "where");
  check_same_device(a, b, "where");
  if (cond.dtype != DType::boolean) fail(Code::DType, "where: condition must be bool, got ", dtype_name(cond.dtype));
  if (a.dtype != b.dtype) fail(Code::DType, "where: dtypes ", dtype_name(a.dtype), " and ", dtype_name(b.dtype), " differ");
  Shape shape = broadcast_shapes(broadcast_shapes(cond.shape, a.shape, "where"), b.shape, "where");
  Tensor out = empty(shape, a.dtype, a.device(), "where");
  auto kernel = where_table().get(a.device());
  enqueue(
      "where", a.device(), [cond, a, b, out, kernel]() mutable { kernel(cond, a, b, out); }, 4 * out.numel());
  return out;
}

Tensor cast(const Tensor& x, DType dtype) {
  Tensor out = empty(x.shape, dtype, x.device(), "cast");
  auto kernel = cast_table().get(x.device());
  enqueue(
      "cast", x.device(), [x, out, kernel]() mutable { kernel(x, out); }, 2 * out.numel());
  return out;
}

Tensor clone(const Tensor& x) { return cast(x, x.dtype); }

void copy_(Tensor& dst, const Tensor& src) {
  check_same_device(dst, src, "copy_");
  if (dst.dtype != src.dtype)
    fail(Code::DType, "copy_: dtypes ", dtype_name(dst.dtype), " and ", dtype_name(src.dtype), " differ");
  if (dst.shape != src.shape) fail(Code::Shape, "copy_: shapes ", shape_str(dst.shape), " and ", shape_str(src.shape), " differ");
  Tensor d = dst;
  auto kernel = cast_table().get(d.device());
  enqueue(
      "copy_", dst.device(), [d, src, kernel]() mutable { kernel(src, d); }, 2 * d.numel());
}

Tensor to_device(const Tensor& x, Device device) {
  if (x.device() == device) return x;
  if (x.device().is_cpu() && device.is_cpu()) return copy_between_cpu_devices(x, device);
  const Device gpu = x.device().is_cpu() ? device : x.device();
  auto transfer = transfer_table().get(gpu);
  Tensor out = empty(x.shape, x.dtype, device, "to");
  // Cross-device order: a CPU source's queued work finishes before the copy is issued on the GPU's
  // stream, and a copy into host memory finishes before the CPU stream may read it. A CUDA source
  // needs no wait here: the copy is queued on the source's own stream, behind the work that writes
  // x, and the transfer orders itself against the destination device's stream with events, so
  // GPU-to-GPU copies (pipeline stages) never stall the JS thread.
  Context& ctx = Context::current();
  if (x.device().is_cpu()) ctx.stream(x.device()).synchronize();
  enqueue("to", gpu, [transfer, x, out]() mutable { transfer(x, out); });
  if (device.is_cpu()) ctx.stream(gpu).synchronize();
  return out;
}

void copy_to_host(const Tensor& x, std::shared_ptr<std::vector<uint8_t>> dst) {
  if (dst->size() != x.nbytes()) fail(Code::Internal, "copy_to_host: buffer size mismatch");
  auto kernel = copy_to_host_table().get(x.device());
  enqueue(
      "data", x.device(), [x, dst, kernel]() { kernel(x, dst->data()); }, x.numel());
}

}  // namespace flock::ops
