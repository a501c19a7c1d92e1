// scatter and scatterReduce front ends. As torch: index has the input's rank, is no larger than
// src in any dim and than the input outside `dim`; src's part beyond index's shape is unused.
// Index values are checked by the kernels as they read them (ERR_INDEX at the next sync point).
#include "ops.h"

namespace flock::ops {
namespace {

// Checks the shapes and returns src cut to index's shape (dense, as the kernels read it).
Tensor scatter_source(const Tensor& x, int64_t& dim, const Tensor& index, const Tensor& src, const char* op) {
  check_same_device(x, index, op);
  check_same_device(x, src, op);
  if (index.dtype != DType::i64 && index.dtype != DType::i32)
    fail(Code::DType, op, ": index must be i64 or i32, got ", dtype_name(index.dtype));
  if (src.dtype != x.dtype) fail(Code::DType, op, ": src is ", dtype_name(src.dtype), ", input is ", dtype_name(x.dtype));
  if (index.dim() != x.dim() || src.dim() != x.dim())
    fail(Code::Shape, op, ": index ", shape_str(index.shape), " and src ", shape_str(src.shape),
         " must have as many dims as input ", shape_str(x.shape));
  dim = normalize_dim(dim, x.dim(), op);
  Tensor cut = src;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (index.shape[d] > src.shape[d])
      fail(Code::Shape, op, ": index ", shape_str(index.shape), " is larger than src ", shape_str(src.shape), " in dim ", d);
    if (d != dim && index.shape[d] > x.shape[d])
      fail(Code::Shape, op, ": index ", shape_str(index.shape), " is larger than input ", shape_str(x.shape), " in dim ", d);
    if (index.shape[d] < src.shape[d]) cut = narrow(cut, d, 0, index.shape[d]);
  }
  return cut;
}

}  // namespace

Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  const Tensor s = scatter_source(x, dim, index, src, "scatter");
  Tensor out = clone(x);
  if (index.numel() == 0) return out;
  auto kernel = scatter_table().get(x.device());
  enqueue("scatter", x.device(), [=]() mutable {
    Tensor o = out;
    kernel(o, index, s, dim);
  });
  return out;
}

Tensor scatter_reduce(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, ScatterReduceOp op,
                      bool include_self) {
  if (op >= ScatterReduceOp::count) fail(Code::Arg, "scatterReduce: unknown reduce");
  if (x.dtype == DType::boolean) fail(Code::DType, "scatterReduce: not defined for bool tensors");
  const Tensor s = scatter_source(x, dim, index, src, "scatterReduce");
  Tensor out = clone(x);
  if (index.numel() == 0) return out;
  Tensor count = op == ScatterReduceOp::mean ? empty(x.shape, DType::i64, x.device(), "scatterReduce") : Tensor{};
  auto kernel = scatter_reduce_table().get(x.device());
  enqueue("scatterReduce", x.device(), [=]() mutable {
    Tensor o = out, c = count;
    kernel(op, o, index, s, dim, include_self, c);
  });
  return out;
}

}  // namespace flock::ops
