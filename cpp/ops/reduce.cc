// Reductions and softmax front ends: they reduce any set of dims to the kernels'
// [outer, red, inner] form — in stages for scattered dims of a reduction that composes, else
// moving the dims to the end with a strided copy.
#include <algorithm>
#include "../context.h"
#include "ops.h"
#include "../generated/reduce_codes.h"

namespace flock::ops {
namespace {

// `wide`: sum, mean and prod of bf16/f16 write their f32 accumulator instead of rounding it, so a
// reduction in stages rounds once, at the end.
Tensor reduce_impl(ReduceOp op, const Tensor& x, Shape dims, bool keepdim, double correction, bool wide) {
  if (op >= ReduceOp::count) fail(Code::Arg, "reduce: unknown op");
  if (x.dtype == DType::boolean) fail(Code::DType, "reduce: not defined for bool tensors; cast first");
  const bool needs_float = op == ReduceOp::mean || op == ReduceOp::var || op == ReduceOp::logsumexp;
  if (needs_float && !is_floating(x.dtype))
    fail(Code::DType, "reduce: mean, var, std and logsumexp need a floating dtype, got ", dtype_name(x.dtype));
  const int64_t nd = x.dim();
  if (dims.empty())
    for (int64_t d = 0; d < nd; ++d) dims.push_back(d);
  Shape reduced(static_cast<size_t>(std::max<int64_t>(nd, 1)), 0);  // flags: 1 where reduced
  for (int64_t& d : dims) {
    d = normalize_dim(d, nd, "reduce");
    if (reduced[d]) fail(Code::Arg, "reduce: dim ", d, " appears more than once");
    reduced[d] = 1;
  }
  Shape out_shape;
  for (int64_t d = 0; d < nd; ++d) {
    if (!reduced[d])
      out_shape.push_back(x.shape[d]);
    else if (keepdim)
      out_shape.push_back(1);
  }
  // Scattered dims of a reduction that composes (a sum of sums, a max of maxes): one pass per run
  // of adjacent dims, innermost first, instead of a strided copy that gathers them (a conv's bias
  // gradient, sum over [0, 2, 3], runs 10x faster this way).
  std::sort(dims.begin(), dims.end());
  const bool composes =
      op == ReduceOp::sum || op == ReduceOp::mean || op == ReduceOp::max || op == ReduceOp::min || op == ReduceOp::prod;
  // bf16/f16 sums, means and products can write their f32 accumulator.
  const bool widens =
      (x.dtype == DType::bf16 || x.dtype == DType::f16) && (op == ReduceOp::sum || op == ReduceOp::mean || op == ReduceOp::prod);
  wide = wide && widens;
  if (composes && x.numel() > 0 && !dims.empty() && dims.back() - dims.front() + 1 != static_cast<int64_t>(dims.size())) {
    // Those keep f32 partials between the stages (the first stage reads the low-precision input
    // and writes f32), rounding once at the end.
    Tensor cur = x;
    size_t end = dims.size();
    while (end > 0) {
      size_t begin = end - 1;
      while (begin > 0 && dims[begin - 1] + 1 == dims[begin]) --begin;
      cur = reduce_impl(op, cur, Shape(dims.begin() + begin, dims.begin() + end), true, correction, widens);
      end = begin;
    }
    if (widens && !wide) cur = cast(cur, x.dtype);
    return reshape(cur, out_shape);
  }
  const DType out_dtype = (op == ReduceOp::argmax || op == ReduceOp::argmin) ? DType::i64 : wide ? DType::f32 : x.dtype;
  Tensor out = empty(out_shape, out_dtype, x.device(), "reduce");
  if (nd == 0) {  // a scalar reduces to itself (var of one element with correction is NaN, as torch)
    auto kernel = reduce_table().get(x.device());
    enqueue(
        "reduce", x.device(), [=]() mutable { kernel(op, x, out, 1, 1, 1, correction); }, 1);
    return out;
  }
  Tensor src = x;
  const bool adjacent = dims.back() - dims.front() + 1 == static_cast<int64_t>(dims.size());
  int64_t outer = 1, red = 1, inner = 1;
  if (adjacent) {
    for (int64_t d = 0; d < dims.front(); ++d) outer *= x.shape[d];
    for (int64_t d : dims) red *= x.shape[d];
    for (int64_t d = dims.back() + 1; d < nd; ++d) inner *= x.shape[d];
  } else {
    std::vector<int64_t> perm;
    for (int64_t d = 0; d < nd; ++d)
      if (!reduced[d]) {
        perm.push_back(d);
        outer *= x.shape[d];
      }
    for (int64_t d : dims) {
      perm.push_back(d);
      red *= x.shape[d];
    }
    src = permute(x, perm);
  }
  if (red == 0 && (op == ReduceOp::max || op == ReduceOp::min || op == ReduceOp::argmax || op == ReduceOp::argmin) &&
      outer * inner > 0)
    fail(Code::Shape, "reduce: cannot take max/min/argmax/argmin over an empty dimension of shape ", shape_str(x.shape));
  auto kernel = reduce_table().get(src.device());
  enqueue(
      "reduce", x.device(), [=]() mutable { kernel(op, src, out, outer, red, inner, correction); },
      op == ReduceOp::logsumexp ? x.numel() * kSlowElement : x.numel());
  return out;
}

}  // namespace

Tensor reduce(ReduceOp op, const Tensor& x, Shape dims, bool keepdim, double correction) {
  return reduce_impl(op, x, std::move(dims), keepdim, correction, false);
}

Tensor softmax(const Tensor& x, int64_t dim, bool log) {
  if (!is_floating(x.dtype)) fail(Code::DType, "softmax: expected a floating dtype, got ", dtype_name(x.dtype));
  dim = normalize_dim(dim, x.dim(), "softmax");
  int64_t outer = 1, n = x.dim() ? x.shape[dim] : 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= x.shape[d];
  for (int64_t d = dim + 1; d < x.dim(); ++d) inner *= x.shape[d];
  Tensor out = empty(x.shape, x.dtype, x.device(), "softmax");
  if (x.numel() == 0) return out;
  auto kernel = softmax_table().get(x.device());
  enqueue(
      log ? "logSoftmax" : "softmax", x.device(), [=]() mutable { kernel(x, out, outer, n, inner, log); }, 16 * x.numel());
  return out;
}

}  // namespace flock::ops
