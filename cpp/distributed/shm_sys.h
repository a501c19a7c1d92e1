// The shared-memory calls that need <fcntl.h>, whose global `struct flock` collides with our
// namespace: this header and its .cc stay outside namespace flock and include none of ours.
#pragma once
#include <cstddef>

namespace flock_sys {

// shm_open(name) read-write: created exclusively (mode 0600) with `create`, else an existing one.
// The descriptor (close-on-exec), or -1 with errno.
int shm_open_rw(const char* name, bool create);

// Reserves `bytes` of memory for the object behind `fd` (posix_fallocate): 0, or the error number.
int shm_reserve(int fd, size_t bytes);

}  // namespace flock_sys
