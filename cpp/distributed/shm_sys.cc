#include "shm_sys.h"
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cerrno>

namespace flock_sys {

int shm_open_rw(const char* name, bool create) {
  return ::shm_open(name, O_RDWR | O_CLOEXEC | (create ? O_CREAT | O_EXCL : 0), create ? 0600 : 0);
}

Mapping map_shared(int fd, size_t bytes, bool reserve) {
  Mapping m;
  if (reserve) {
    m.err = ::posix_fallocate(fd, 0, static_cast<off_t>(bytes));
    if (m.err) m.step = "sizing";
  } else {
    struct stat st {};
    if (::fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) != bytes) {
      m.step = "size";
      m.size = static_cast<long long>(st.st_size);
    }
  }
  if (*m.step == '\0') {
    void* base = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) {
      m.err = errno;
      m.step = "mapping";
    } else {
      m.base = base;
    }
  }
  ::close(fd);
  return m;
}

}  // namespace flock_sys
