// The binary kernel for f64, f16, the integer dtypes and bool (binary_loops.h; why one file per dtype: elementwise.h).
#include "binary_loops.h"

namespace flock::cpu {

template void binary_typed<double>(BinaryOp, const Tensor&, const Tensor&, Tensor&);
template void binary_typed<f16>(BinaryOp, const Tensor&, const Tensor&, Tensor&);
template void binary_typed<int32_t>(BinaryOp, const Tensor&, const Tensor&, Tensor&);
template void binary_typed<int64_t>(BinaryOp, const Tensor&, const Tensor&, Tensor&);
template void binary_typed<uint8_t>(BinaryOp, const Tensor&, const Tensor&, Tensor&);
template void binary_typed<bool>(BinaryOp, const Tensor&, const Tensor&, Tensor&);

}  // namespace flock::cpu
