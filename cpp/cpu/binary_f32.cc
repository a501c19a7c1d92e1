// The binary kernel for f32 (binary_loops.h; why one file per dtype: elementwise.h).
#include "binary_loops.h"

namespace flock::cpu {

template void binary_typed<float>(BinaryOp, const Tensor&, const Tensor&, Tensor&);

}  // namespace flock::cpu
