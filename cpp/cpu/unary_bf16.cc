// The unary kernel and its derivative for bf16 (unary_loops.h; why one file per dtype: elementwise.h).
#include "unary_loops.h"

namespace flock::cpu {

template void unary_typed<bf16>(UnaryOp, const Tensor&, Tensor&, double, double);
template void unary_backward_typed<bf16>(UnaryOp, const Tensor&, const Tensor&, Tensor&, double, double);

}  // namespace flock::cpu
