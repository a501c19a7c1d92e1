// The binary kernel for bf16 (binary_loops.h; why one file per dtype: elementwise.h).
#include "binary_loops.h"

namespace flock::cpu {

template void binary_typed<bf16>(BinaryOp, const Tensor&, const Tensor&, Tensor&);

}  // namespace flock::cpu
