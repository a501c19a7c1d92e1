// A file that appears complete or not at all: written to a temporary file in the target's
// directory, then fsync, rename over the target and fsync of the directory, so a crash at any
// point leaves either the previous file or the new one, never a torn mix.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

namespace flock::io {

class AtomicFile {
 public:
  AtomicFile(const std::string& path, const char* op);
  // Removes the temporary file unless commit() succeeded.
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, size_t bytes);
  void commit();

 private:
  [[noreturn]] void fail_errno(const char* what, int err) const;
  std::string path_, tmp_;
  const char* op_;
  std::FILE* file_ = nullptr;  // used only for its descriptor; all I/O is write(2)
  int fd_ = -1;
  bool committed_ = false;
};

// Opens `path` for reading (close-on-exec); returns the FILE (for its descriptor) or null with errno.
// stdio, not open(2): <fcntl.h> declares a global `struct flock` that collides with our namespace.
std::FILE* open_for_read(const std::string& path);

// Writes all of `bytes` / reads them at `offset`, retrying short transfers and EINTR; returns
// false with errno set on failure, and for a read that reaches the end of the file first.
bool write_all(int fd, const void* data, size_t bytes);
bool pread_all(int fd, void* dst, size_t bytes, uint64_t offset);

}  // namespace flock::io
