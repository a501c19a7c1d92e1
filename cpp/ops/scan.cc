// cumsum and cumprod front ends (and cumprod's gradient): the dim becomes the middle of a
// contiguous [outer, n, inner] view, so no copy is needed. Integers and bool scan in i64, as torch.
#include "ops.h"

namespace flock::ops {
namespace {

struct Lines {
  int64_t outer = 1, n = 1, inner = 1;
};

Lines lines_of(const Tensor& x, int64_t dim) {
  Lines l;
  if (x.dim() == 0) return l;
  for (int64_t d = 0; d < dim; ++d) l.outer *= x.shape[d];
  l.n = x.shape[dim];
  for (int64_t d = dim + 1; d < x.dim(); ++d) l.inner *= x.shape[d];
  return l;
}

}  // namespace

Tensor scan(const Tensor& x, int64_t dim, bool prod, bool reverse) {
  const char* op = prod ? "cumprod" : "cumsum";
  dim = normalize_dim(dim, x.dim(), op);
  const Tensor src = is_floating(x.dtype) || x.dtype == DType::i64 ? x : cast(x, DType::i64);
  Tensor out = empty(src.shape, src.dtype, src.device(), op);
  const Lines l = lines_of(src, dim);
  if (src.numel() == 0) return out;
  auto kernel = scan_table().get(src.device());
  enqueue(op, src.device(), [=]() mutable { kernel(src, out, l.outer, l.n, l.inner, prod, reverse); });
  return out;
}

Tensor cumprod_backward(const Tensor& x, const Tensor& gy, int64_t dim) {
  check_same_device(x, gy, "cumprod");
  if (!is_floating(x.dtype)) fail(Code::DType, "cumprod: the gradient needs a floating dtype, got ", dtype_name(x.dtype));
  if (gy.dtype != x.dtype || gy.shape != x.shape)
    fail(Code::Shape, "cumprod: gradient ", dtype_name(gy.dtype), shape_str(gy.shape), " does not match input ",
         dtype_name(x.dtype), shape_str(x.shape));
  dim = normalize_dim(dim, x.dim(), "cumprod");
  Tensor gx = empty(x.shape, x.dtype, x.device(), "cumprod");
  const Lines l = lines_of(x, dim);
  if (x.numel() == 0) return gx;
  auto kernel = cumprod_backward_table().get(x.device());
  enqueue("cumprod", x.device(), [=]() mutable { kernel(x, gy, gx, l.outer, l.n, l.inner); });
  return gx;
}

}  // namespace flock::ops
