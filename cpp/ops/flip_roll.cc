// flip and roll: both are strided copies (no kernel of their own). flip reads each flipped dim
// backwards (a negative source stride); roll splits each rolled dim into the two runs that wrap,
// one copy per combination of runs (at most 2^k copies for k rolled dims).
#include <algorithm>
#include "ops.h"

namespace flock::ops {
namespace {

std::vector<int64_t> row_major_strides(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (int64_t d = static_cast<int64_t>(s.size()) - 2; d >= 0; --d) st[d] = st[d + 1] * s[d + 1];
  return st;
}

void queue_copy(const char* op, const Tensor& src, const Tensor& dst, const StridedCopy& plan) {
  auto kernel = strided_copy_table().get(src.device());
  Tensor d = dst;
  enqueue(op, src.device(), [kernel, src, d, plan]() mutable { kernel(src, d, plan); });
}

}  // namespace

Tensor flip(const Tensor& x, const std::vector<int64_t>& dims) {
  const int64_t nd = x.dim();
  std::vector<bool> flipped(static_cast<size_t>(std::max<int64_t>(nd, 1)), false);
  for (int64_t d : dims) {
    const int64_t k = normalize_dim(d, nd, "flip");
    if (flipped[k]) fail(Code::Arg, "flip: dim ", k, " appears more than once in ", shape_str(dims));
    flipped[k] = true;
  }
  Tensor out = empty(x.shape, x.dtype, x.device(), "flip");
  if (out.numel() == 0) return out;
  StridedCopy plan{x.shape, row_major_strides(x.shape), row_major_strides(x.shape), 0, 0};
  for (int64_t d = 0; d < nd; ++d) {
    if (!flipped[d]) continue;
    plan.src_offset += (x.shape[d] - 1) * plan.src_strides[d];
    plan.src_strides[d] = -plan.src_strides[d];
  }
  queue_copy("flip", x, out, plan);
  return out;
}

Tensor roll(const Tensor& x, const std::vector<int64_t>& shifts, const std::vector<int64_t>& dims) {
  const int64_t nd = x.dim();
  if (shifts.size() != dims.size())
    fail(Code::Arg, "roll: shifts ", shape_str(shifts), " and dims ", shape_str(dims), " must have the same length");
  if (nd == 0 && !dims.empty()) fail(Code::Index, "roll: a 0-d tensor has no dim to roll");
  // Net shift per dim in [0, size): a dim named twice rolls by the sum of its shifts.
  std::vector<int64_t> shift(static_cast<size_t>(nd), 0);
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = normalize_dim(dims[i], nd, "roll");
    const int64_t n = x.shape[d];
    if (n > 0) shift[d] = ((shift[d] + shifts[i]) % n + n) % n;
  }
  Tensor out = empty(x.shape, x.dtype, x.device(), "roll");
  if (out.numel() == 0) return out;
  const auto st = row_major_strides(x.shape);
  std::vector<int64_t> rolled;
  for (int64_t d = 0; d < nd; ++d)
    if (shift[d] != 0) rolled.push_back(d);
  // Run r of dim d: source [0, n - s) goes to [s, n); source [n - s, n) goes to [0, s).
  const size_t combos = size_t(1) << rolled.size();
  for (size_t c = 0; c < combos; ++c) {
    StridedCopy plan{x.shape, st, st, 0, 0};
    for (size_t k = 0; k < rolled.size(); ++k) {
      const int64_t d = rolled[k], n = x.shape[d], s = shift[d];
      const bool wrap = (c >> k) & 1;
      plan.shape[d] = wrap ? s : n - s;
      plan.src_offset += (wrap ? n - s : 0) * st[d];
      plan.dst_offset += (wrap ? 0 : s) * st[d];
    }
    queue_copy("roll", x, out, plan);
  }
  return out;
}

}  // namespace flock::ops
