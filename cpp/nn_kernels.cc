#include "nn_kernels.h"

namespace flock {
FLOCK_DEFINE_KERNEL(conv2d_forward)
FLOCK_DEFINE_KERNEL(conv2d_backward_input)
FLOCK_DEFINE_KERNEL(conv2d_backward_weight)
FLOCK_DEFINE_KERNEL(max_pool2d_forward)
FLOCK_DEFINE_KERNEL(max_pool2d_backward)
FLOCK_DEFINE_KERNEL(avg_pool2d_forward)
FLOCK_DEFINE_KERNEL(avg_pool2d_backward)
FLOCK_DEFINE_KERNEL(cross_entropy_forward)
FLOCK_DEFINE_KERNEL(cross_entropy_backward)
FLOCK_DEFINE_KERNEL(row_norm_forward)
FLOCK_DEFINE_KERNEL(row_norm_backward)
FLOCK_DEFINE_KERNEL(adam_step)
FLOCK_DEFINE_KERNEL(sgd_step)
}  // namespace flock
