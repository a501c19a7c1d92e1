// Shape ops. reshape and narrow along the leading dim are free views (same storage, new offset);
// permute, expand, other narrows and cat are strided copies.
#include <algorithm>
#include "ops.h"

namespace flock::ops {
namespace {

std::vector<int64_t> contiguous_strides(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (int64_t d = static_cast<int64_t>(s.size()) - 2; d >= 0; --d) st[d] = st[d + 1] * s[d + 1];
  return st;
}

void launch_copy(const char* op, const Tensor& src, Tensor& dst, StridedCopy plan) {
  Tensor d = dst;
  auto kernel = strided_copy_table().get(src.device());
  enqueue(
      op, src.device(), [src, d, plan, kernel]() mutable { kernel(src, d, plan); }, 4 * d.numel());
}

}  // namespace

Tensor reshape(const Tensor& x, Shape shape) {
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (infer >= 0) fail(Code::Shape, "reshape: only one dimension can be -1, got ", shape_str(shape));
      infer = static_cast<int64_t>(i);
    } else if (shape[i] < 0) {
      fail(Code::Shape, "reshape: invalid size ", shape[i], " in ", shape_str(shape));
    } else {
      known *= shape[i];
    }
  }
  const int64_t n = x.numel();
  if (infer >= 0) {
    if (known == 0 || n % known != 0)
      fail(Code::Shape, "reshape: cannot reshape ", shape_str(x.shape), " into ", shape_str(shape));
    shape[infer] = n / known;
  }
  if (checked_numel(shape, "reshape") != n)
    fail(Code::Shape, "reshape: cannot reshape ", shape_str(x.shape), " (", n, " elements) into ", shape_str(shape));
  Tensor out = x;
  out.shape = std::move(shape);
  return out;
}

Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length) {
  if (x.dim() == 0) fail(Code::Shape, "narrow: cannot narrow a 0-d tensor");
  dim = normalize_dim(dim, x.dim(), "narrow");
  const int64_t size = x.shape[dim];
  if (start < 0) start += size;
  if (start < 0 || length < 0 || start + length > size)
    fail(Code::Index, "narrow: range [", start, ", ", start + length, ") is out of bounds for dim ", dim, " of shape ",
         shape_str(x.shape));
  Shape shape = x.shape;
  shape[dim] = length;
  bool leading = true;  // all dims before `dim` are 1: the slice is one contiguous block
  for (int64_t d = 0; d < dim; ++d) leading = leading && x.shape[d] == 1;
  const auto st = contiguous_strides(x.shape);
  if (leading) {
    Tensor out = x;
    out.shape = shape;
    out.offset = x.offset + start * st[dim];
    return out;
  }
  Tensor out = empty(shape, x.dtype, x.device(), "narrow");
  StridedCopy plan{shape, st, contiguous_strides(shape), start * st[dim], 0};
  launch_copy("narrow", x, out, plan);
  return out;
}

Tensor permute(const Tensor& x, const std::vector<int64_t>& dims) {
  const int64_t nd = x.dim();
  if (static_cast<int64_t>(dims.size()) != nd)
    fail(Code::Shape, "permute: got ", dims.size(), " dims for a tensor of shape ", shape_str(x.shape));
  std::vector<bool> seen(static_cast<size_t>(nd), false);
  std::vector<int64_t> perm(static_cast<size_t>(nd));
  for (int64_t i = 0; i < nd; ++i) {
    perm[i] = normalize_dim(dims[i], nd, "permute");
    if (seen[perm[i]]) fail(Code::Arg, "permute: dim ", perm[i], " repeats in ", shape_str(dims));
    seen[perm[i]] = true;
  }
  const auto st = contiguous_strides(x.shape);
  Shape shape(static_cast<size_t>(nd));
  std::vector<int64_t> src_st(static_cast<size_t>(nd));
  for (int64_t i = 0; i < nd; ++i) {
    shape[i] = x.shape[perm[i]];
    src_st[i] = st[perm[i]];
  }
  bool identity = true;
  for (int64_t i = 0; i < nd; ++i) identity = identity && (perm[i] == i || x.shape[perm[i]] == 1);
  if (identity) return reshape(x, shape);
  Tensor out = empty(shape, x.dtype, x.device(), "permute");
  launch_copy("permute", x, out, StridedCopy{shape, src_st, contiguous_strides(shape), 0, 0});
  return out;
}

Tensor expand(const Tensor& x, const Shape& shape) {
  if (shape.size() < x.shape.size())
    fail(Code::Shape, "expand: cannot expand ", shape_str(x.shape), " to fewer dims ", shape_str(shape));
  Shape target = shape;
  const size_t lead = shape.size() - x.shape.size();
  for (size_t i = 0; i < shape.size(); ++i) {
    const int64_t own = i < lead ? 1 : x.shape[i - lead];
    if (target[i] == -1 && i >= lead) target[i] = own;
    if (target[i] < 0 || (own != 1 && own != target[i]))
      fail(Code::Shape, "expand: cannot expand ", shape_str(x.shape), " to ", shape_str(shape));
  }
  checked_numel(target, "expand");
  if (target == x.shape) return x;
  std::vector<int64_t> src_st(target.size(), 0);
  const auto own_st = contiguous_strides(x.shape);
  for (size_t i = lead; i < target.size(); ++i) src_st[i] = x.shape[i - lead] == 1 ? 0 : own_st[i - lead];
  Tensor out = empty(target, x.dtype, x.device(), "expand");
  launch_copy("expand", x, out, StridedCopy{target, src_st, contiguous_strides(target), 0, 0});
  return out;
}

Tensor cat(const std::vector<Tensor>& xs, int64_t dim) {
  if (xs.empty()) fail(Code::Arg, "cat: expected at least one tensor");
  const Tensor& first = xs[0];
  if (first.dim() == 0) fail(Code::Shape, "cat: zero-dimensional tensors cannot be concatenated");
  dim = normalize_dim(dim, first.dim(), "cat");
  Shape shape = first.shape;
  int64_t total = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const Tensor& t = xs[i];
    check_same_device(first, t, "cat");
    if (t.dtype != first.dtype)
      fail(Code::DType, "cat: tensor ", i, " is ", dtype_name(t.dtype), ", expected ", dtype_name(first.dtype));
    bool ok = t.dim() == first.dim();
    for (int64_t d = 0; ok && d < t.dim(); ++d) ok = d == dim || t.shape[d] == first.shape[d];
    if (!ok)
      fail(Code::Shape, "cat: tensor ", i, " has shape ", shape_str(t.shape), ", incompatible with ", shape_str(first.shape),
           " along dim ", dim);
    total += t.shape[dim];
  }
  shape[dim] = total;
  Tensor out = empty(shape, first.dtype, first.device(), "cat");
  const auto out_st = contiguous_strides(shape);
  int64_t at = 0;
  for (const Tensor& t : xs) {
    if (t.numel() > 0) launch_copy("cat", t, out, StridedCopy{t.shape, contiguous_strides(t.shape), out_st, 0, at * out_st[dim]});
    at += t.shape[dim];
  }
  return out;
}

}  // namespace flock::ops
