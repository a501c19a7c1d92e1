#include "sys_file.h"
#include <fcntl.h>
#include <cerrno>

namespace flock_sys {

int create_exclusive(const char* path, bool* direct) {
  const int flags = O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC;
  if (*direct) {
    const int fd = ::open(path, flags | O_DIRECT, 0666);
    if (fd >= 0 || errno != EINVAL) return fd;
    *direct = false;
  }
  return ::open(path, flags, 0666);
}

bool clear_direct(int fd) {
  const int fl = ::fcntl(fd, F_GETFL);
  return fl >= 0 && ::fcntl(fd, F_SETFL, fl & ~O_DIRECT) == 0;
}

int open_read(const char* path) { return ::open(path, O_RDONLY | O_CLOEXEC); }

}  // namespace flock_sys
