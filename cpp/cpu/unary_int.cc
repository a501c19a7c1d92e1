// The unary kernel and its derivative for the integer dtypes (no derivative) (unary_loops.h; why one file per dtype:
// elementwise.h).
#include "unary_loops.h"

namespace flock::cpu {

template void unary_typed<int32_t>(UnaryOp, const Tensor&, Tensor&, double, double);
template void unary_typed<int64_t>(UnaryOp, const Tensor&, Tensor&, double, double);
template void unary_typed<uint8_t>(UnaryOp, const Tensor&, Tensor&, double, double);

}  // namespace flock::cpu
