// Creation ops: full, from_host, arange, linspace, random, one_hot.
#include <cmath>
#include <cstring>
#include "ops.h"
#include "../generated/random_codes.h"

namespace flock::ops {

namespace {

void check_fill_value(DType dtype, double value, const char* op) {
  double lo = 0, hi = 0;
  switch (dtype) {
    case DType::i32:
      lo = -2147483648.0, hi = 2147483647.0;
      break;
    case DType::i64:
      lo = -9223372036854775808.0, hi = 9223372036854774784.0;
      break;  // the last double below 2^63
    case DType::u8:
      lo = 0, hi = 255;
      break;
    default:
      return;
  }
  const double t = std::trunc(value);
  if (!(t >= lo && t <= hi)) fail(Code::Range, op, ": value ", num_str(value), " is out of range for ", dtype_name(dtype));
}

void launch_fill(const char* op, Tensor out, double value) {
  check_fill_value(out.dtype, value, op);
  auto kernel = fill_table().get(out.device());
  enqueue(
      op, out.device(), [out, value, kernel]() mutable { kernel(out, value); }, out.numel());
}

}  // namespace

Tensor full(const Shape& shape, DType dtype, Device device, double value) {
  Tensor out = empty(shape, dtype, device, "full");
  launch_fill("full", out, value);
  return out;
}

void fill_(Tensor& self, double value) { launch_fill("fill_", self, value); }

Tensor from_host(const void* data, size_t bytes, const Shape& shape, DType dtype, Device device) {
  const int64_t n = checked_numel(shape, "tensor");
  if (bytes != static_cast<size_t>(n) * dtype_size(dtype))
    fail(Code::Shape, "tensor: ", bytes, " bytes of data do not fill shape ", shape_str(shape), " of ", dtype_name(dtype));
  Tensor out = empty(shape, dtype, device, "tensor");
  if (device.is_cpu()) {
    std::memcpy(out.raw(), data, bytes);  // a fresh storage: no queued work can touch it yet
  } else {
    auto staged =
        std::make_shared<std::vector<uint8_t>>(static_cast<const uint8_t*>(data), static_cast<const uint8_t*>(data) + bytes);
    auto kernel = copy_from_host_table().get(out.device());
    enqueue("tensor", device, [out, staged, kernel]() mutable { kernel(staged->data(), out); });
  }
  return out;
}

Tensor arange(double start, double end, double step, DType dtype, Device device) {
  if (!std::isfinite(start) || !std::isfinite(end) || !std::isfinite(step) || step == 0)
    fail(Code::Arg, "arange: start, end and step must be finite and step non-zero (got ", start, ", ", end, ", ", step, ")");
  if (dtype == DType::boolean) fail(Code::DType, "arange: not defined for bool tensors");  // as torch.arange
  const double count = std::ceil((end - start) / step);
  if (count > static_cast<double>(int64_t(1) << 40)) fail(Code::OOM, "arange: ", count, " elements are too many");
  const int64_t n = count > 0 ? static_cast<int64_t>(count) : 0;
  Tensor out = empty({n}, dtype, device, "arange");
  auto kernel = arange_table().get(out.device());
  enqueue("arange", device, [out, start, step, kernel]() mutable { kernel(out, start, step); });
  return out;
}

Tensor linspace(double start, double end, int64_t steps, DType dtype, Device device) {
  if (!std::isfinite(start) || !std::isfinite(end)) fail(Code::Arg, "linspace: start and end must be finite");
  if (steps < 0) fail(Code::Shape, "linspace: steps must be non-negative, got ", steps);
  if (dtype == DType::boolean) fail(Code::DType, "linspace: not defined for bool tensors");  // as torch.linspace
  const double step = steps > 1 ? (end - start) / static_cast<double>(steps - 1) : 0;
  Tensor out = empty({steps}, dtype, device, "linspace");
  auto kernel = arange_table().get(out.device());
  enqueue("linspace", device, [out, start, step, kernel]() mutable { kernel(out, start, step); });
  return out;
}

Tensor random(RandomKind kind, const Shape& shape, DType dtype, Device device, uint64_t seed, uint64_t offset, double a,
              double b) {
  const char* op = kind == RandomKind::uniform   ? "rand"
                   : kind == RandomKind::normal  ? "randn"
                   : kind == RandomKind::randint ? "randint"
                                                 : "bernoulli";
  if (!std::isfinite(a) || !std::isfinite(b)) fail(Code::Arg, op, ": parameters must be finite");
  if ((kind == RandomKind::uniform || kind == RandomKind::normal) && !is_floating(dtype))
    fail(Code::DType, op, ": expected a floating dtype, got ", dtype_name(dtype));
  if (kind == RandomKind::randint && (b <= a || b - a > 4294967296.0))
    fail(Code::Range, op, ": need low < high and high - low <= 2^32 (got ", a, ", ", b, ")");
  if (kind == RandomKind::normal && b < 0) fail(Code::Range, op, ": std must be non-negative, got ", b);
  if (kind == RandomKind::bernoulli && (a < 0 || a > 1)) fail(Code::Range, op, ": p must lie in [0, 1], got ", a);
  Tensor out = empty(shape, dtype, device, op);
  auto kernel = random_table().get(out.device());
  enqueue(op, device, [=]() mutable { kernel(kind, out, seed, offset, a, b); });
  return out;
}

Tensor one_hot(const Tensor& index, int64_t num_classes) {
  if (index.dtype != DType::i64 && index.dtype != DType::i32)
    fail(Code::DType, "oneHot: class indices must be i64 or i32, got ", dtype_name(index.dtype));
  if (num_classes < 0) fail(Code::Range, "oneHot: numClasses must be non-negative, got ", num_classes);
  Shape shape = index.shape;
  shape.push_back(num_classes);
  Tensor out = empty(shape, DType::i64, index.device(), "oneHot");
  if (index.numel() == 0) return out;
  auto kernel = one_hot_table().get(out.device());
  enqueue("oneHot", index.device(), [index, out, num_classes, kernel]() mutable { kernel(index, out, num_classes); });
  return out;
}

}  // namespace flock::ops
