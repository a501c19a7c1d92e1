// tril/triu front end: checks the rank, allocates the output and queues the triangular kernel.
#include "ops.h"

namespace flock::ops {

Tensor triangular(const Tensor& x, int64_t diagonal, bool upper) {
  const char* op = upper ? "triu" : "tril";
  if (x.dim() < 2) fail(Code::Shape, op, ": expected a tensor of at least 2 dims, got shape ", shape_str(x.shape));
  Tensor out = empty(x.shape, x.dtype, x.device(), op);
  if (out.numel() == 0) return out;
  auto kernel = triangular_table().get(x.device());
  enqueue(op, x.device(), [kernel, x, out, diagonal, upper]() mutable { kernel(x, out, diagonal, upper); });
  return out;
}

}  // namespace flock::ops
