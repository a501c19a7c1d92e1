#include "bias_act.h"

namespace flock {
FLOCK_DEFINE_KERNEL(bias_act)
FLOCK_DEFINE_KERNEL(bias_act_backward)
}  // namespace flock
