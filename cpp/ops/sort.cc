// sort, argsort and topk front ends. The kernels sort contiguous rows, so another dim is moved
// last (a strided copy) and the results moved back; topk is the first k of a stable sort.
#include <numeric>
#include "ops.h"

namespace flock::ops {

std::pair<Tensor, Tensor> sort(const Tensor& x, int64_t dim, bool descending, const char* op) {
  dim = normalize_dim(dim, x.dim(), op);
  const int64_t last = std::max<int64_t>(x.dim() - 1, 0);
  std::vector<int64_t> perm(static_cast<size_t>(x.dim()));
  std::iota(perm.begin(), perm.end(), int64_t(0));
  if (x.dim() > 0) std::swap(perm[dim], perm[last]);  // its own inverse
  const bool moved = dim != last;
  const Tensor src = moved ? permute(x, perm) : x;
  Tensor values = empty(src.shape, src.dtype, src.device(), op);
  Tensor indices = empty(src.shape, DType::i64, src.device(), op);
  const int64_t n = x.dim() ? src.shape[last] : 1;
  const int64_t rows = n ? src.numel() / n : 0;
  auto kernel = sort_table().get(src.device());
  if (src.numel() > 0) enqueue(op, src.device(), [=]() mutable { kernel(src, values, indices, rows, n, descending); });
  if (!moved) return {values, indices};
  return {permute(values, perm), permute(indices, perm)};
}

std::pair<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim, bool largest) {
  dim = normalize_dim(dim, x.dim(), "topk");
  const int64_t size = x.dim() ? x.shape[dim] : 1;
  if (k < 0 || k > size)
    fail(Code::Range, "topk: k (", k, ") must be in [0, ", size, "] for dim ", dim, " of shape ", shape_str(x.shape));
  auto [values, indices] = sort(x, dim, largest, "topk");
  if (x.dim() == 0) return {values, indices};
  return {narrow(values, dim, 0, k), narrow(indices, dim, 0, k)};
}

}  // namespace flock::ops
