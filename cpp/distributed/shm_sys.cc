#include "shm_sys.h"
#include <fcntl.h>
#include <sys/mman.h>

namespace flock_sys {

int shm_open_rw(const char* name, bool create) {
  return ::shm_open(name, O_RDWR | O_CLOEXEC | (create ? O_CREAT | O_EXCL : 0), create ? 0600 : 0);
}

int shm_reserve(int fd, size_t bytes) { return ::posix_fallocate(fd, 0, static_cast<off_t>(bytes)); }

}  // namespace flock_sys
