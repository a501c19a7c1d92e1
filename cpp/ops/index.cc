// Indexing front ends: index_select, gather, scatter_add. Index values are checked by the kernels
// as they read them (an out-of-range index rejects the next sync point with ERR_INDEX).
#include "ops.h"

namespace flock::ops {
namespace {

void check_index(const Tensor& x, const Tensor& index, const char* op) {
  check_same_device(x, index, op);
  if (index.dtype != DType::i64 && index.dtype != DType::i32)
    fail(Code::DType, op, ": index must be i64 or i32, got ", dtype_name(index.dtype));
}

// gather/scatter_add: index has the input's rank and is no larger outside `dim`. Returns `dim`
// normalised.
int64_t check_gather_shapes(const Tensor& x, int64_t dim, const Tensor& index, const char* op) {
  if (index.dim() != x.dim())
    fail(Code::Shape, op, ": index ", shape_str(index.shape), " must have as many dims as input ", shape_str(x.shape));
  dim = normalize_dim(dim, x.dim(), op);
  for (int64_t d = 0; d < x.dim(); ++d)
    if (d != dim && index.shape[d] > x.shape[d])
      fail(Code::Shape, op, ": index ", shape_str(index.shape), " is larger than input ", shape_str(x.shape), " in dim ", d);
  return dim;
}

}  // namespace

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index, const char* op) {
  check_index(x, index, op);
  if (index.dim() > 1) fail(Code::Shape, op, ": index must be 1-D, got ", shape_str(index.shape));
  if (x.dim() == 0) fail(Code::Shape, op, ": cannot index a 0-d tensor");
  dim = normalize_dim(dim, x.dim(), op);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= x.shape[d];
  for (int64_t d = dim + 1; d < x.dim(); ++d) inner *= x.shape[d];
  Shape shape = x.shape;
  shape[dim] = index.numel();
  Tensor out = empty(shape, x.dtype, x.device(), op);
  if (out.numel() == 0) return out;
  if (x.shape[dim] == 0) fail(Code::Index, op, ": cannot select from an empty dim of shape ", shape_str(x.shape));
  const int64_t dim_size = x.shape[dim];
  auto kernel = index_select_table().get(x.device());
  enqueue(op, x.device(), [=]() mutable { kernel(x, index, out, outer, dim_size, inner); });
  return out;
}

Tensor gather(const Tensor& x, int64_t dim, const Tensor& index, const char* op) {
  check_index(x, index, op);
  dim = check_gather_shapes(x, dim, index, op);
  Tensor out = empty(index.shape, x.dtype, x.device(), op);
  if (out.numel() == 0) return out;
  auto kernel = gather_table().get(x.device());
  enqueue(op, x.device(), [=]() mutable { kernel(x, index, out, dim); });
  return out;
}

Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  check_index(x, index, "scatterAdd");
  check_same_device(x, src, "scatterAdd");
  if (src.dtype != x.dtype) fail(Code::DType, "scatterAdd: src is ", dtype_name(src.dtype), ", input is ", dtype_name(x.dtype));
  // Refused at the call (the kernels add numbers; torch's logical or on bool is not implemented).
  if (x.dtype == DType::boolean) fail(Code::DType, "scatterAdd: not defined for bool tensors");
  if (index.shape != src.shape)
    fail(Code::Shape, "scatterAdd: index ", shape_str(index.shape), " and src ", shape_str(src.shape),
         " must have the same shape");
  dim = check_gather_shapes(x, dim, index, "scatterAdd");
  Tensor out = clone(x);
  if (index.numel() == 0) return out;
  auto kernel = scatter_add_table().get(x.device());
  enqueue("scatterAdd", x.device(), [=]() mutable {
    Tensor o = out;
    kernel(o, index, src, dim);
  });
  return out;
}

}  // namespace flock::ops
