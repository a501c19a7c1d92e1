// The kernel tables of the scan, sort, scatter, select and sample families (declared in kernels.h).
#include "kernels.h"

namespace flock {
FLOCK_DEFINE_KERNEL(scan)
FLOCK_DEFINE_KERNEL(cumprod_backward)
FLOCK_DEFINE_KERNEL(sort)
FLOCK_DEFINE_KERNEL(scatter)
FLOCK_DEFINE_KERNEL(scatter_reduce)
FLOCK_DEFINE_KERNEL(masked_select)
FLOCK_DEFINE_KERNEL(nonzero)
FLOCK_DEFINE_KERNEL(multinomial)
FLOCK_DEFINE_KERNEL(multinomial_keys)
FLOCK_DEFINE_KERNEL(multinomial_check)
}  // namespace flock
