// maskedSelect and nonzero front ends. Their output size depends on the mask's values, so the
// caller counts the true elements first (a sync point) and passes the count; the kernels place
// each element by the mask's running count and refuse a count that does not match.
#include "ops.h"

namespace flock::ops {
namespace {

// The inclusive running count of a bool mask, flattened, in i64.
Tensor positions_of(const Tensor& mask) {
  const Tensor flat = reshape(mask, {mask.numel()});
  return scan(cast(flat, DType::i64), 0, false, false);
}

void check_count(int64_t count, int64_t numel, const char* op) {
  if (count < 0 || count > numel) fail(Code::Range, op, ": count ", count, " is outside [0, ", numel, "]");
}

}  // namespace

Tensor masked_select(const Tensor& x, const Tensor& mask, int64_t count) {
  check_same_device(x, mask, "maskedSelect");
  if (mask.dtype != DType::boolean) fail(Code::DType, "maskedSelect: mask must be a bool tensor, got ", dtype_name(mask.dtype));
  const Shape shape = broadcast_shapes(x.shape, mask.shape, "maskedSelect");
  const Tensor xs = x.shape == shape ? x : expand(x, shape);
  const Tensor ms = mask.shape == shape ? mask : expand(mask, shape);
  check_count(count, xs.numel(), "maskedSelect");
  Tensor out = empty({count}, x.dtype, x.device(), "maskedSelect");
  if (xs.numel() == 0) return out;
  const Tensor pos = positions_of(ms);
  auto kernel = masked_select_table().get(x.device());
  enqueue("maskedSelect", x.device(), [=]() mutable { kernel(xs, ms, pos, out); });
  return out;
}

Tensor nonzero(const Tensor& mask, int64_t count) {
  if (mask.dtype != DType::boolean) fail(Code::DType, "nonzero: mask must be a bool tensor, got ", dtype_name(mask.dtype));
  check_count(count, mask.numel(), "nonzero");
  Tensor out = empty({count, mask.dim()}, DType::i64, mask.device(), "nonzero");
  if (out.numel() == 0) return out;
  const Tensor pos = positions_of(mask);
  auto kernel = nonzero_table().get(mask.device());
  enqueue("nonzero", mask.device(), [=]() mutable { kernel(mask, pos, out); });
  return out;
}

}  // namespace flock::ops
