#include "rnn_cell.h"

namespace flock {
FLOCK_DEFINE_KERNEL(rnn_cell_forward)
FLOCK_DEFINE_KERNEL(rnn_cell_backward)
}  // namespace flock
