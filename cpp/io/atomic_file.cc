#include "atomic_file.h"
#include <dirent.h>
#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include "../error.h"

namespace flock::io {
namespace {

// Large transfers go in pieces: one write() of more than 2 GiB is cut short by Linux anyway.
constexpr size_t kChunk = size_t(64) << 20;

std::string dir_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string base_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

bool write_all(int fd, const void* data, size_t bytes) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::write(fd, p, std::min(bytes, kChunk));
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += n;
    bytes -= static_cast<size_t>(n);
  }
  return true;
}

bool pread_all(int fd, void* dst, size_t bytes, uint64_t offset) {
  char* p = static_cast<char*>(dst);
  while (bytes > 0) {
    const ssize_t n = ::pread(fd, p, std::min(bytes, kChunk), static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    if (n == 0) {
      errno = 0;  // end of file
      return false;
    }
    p += n;
    offset += static_cast<uint64_t>(n);
    bytes -= static_cast<size_t>(n);
  }
  return true;
}

AtomicFile::AtomicFile(const std::string& path, const char* op) : path_(path), op_(op) {
  static std::atomic<unsigned> counter{0};
  if (path.empty() || path.back() == '/') fail(Code::Arg, op, ": '", path, "' is not a file path");
  tmp_ = dir_of(path) + "/." + base_of(path) + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
  // "x": O_EXCL, never another writer's file; "e": O_CLOEXEC.
  file_ = std::fopen(tmp_.c_str(), "wbxe");
  if (!file_) fail_errno("cannot create a temporary file in its directory", errno);
  fd_ = fileno(file_);
}

AtomicFile::~AtomicFile() {
  if (file_) std::fclose(file_);
  if (!committed_) ::unlink(tmp_.c_str());
}

std::FILE* open_for_read(const std::string& path) { return std::fopen(path.c_str(), "rbe"); }

void AtomicFile::fail_errno(const char* what, int err) const {
  fail(Code::IO, op_, ": ", path_, ": ", what, ": ", std::strerror(err));
}

void AtomicFile::write(const void* data, size_t bytes) {
  if (!write_all(fd_, data, bytes)) fail_errno("write failed", errno);
}

void AtomicFile::commit() {
  if (::fsync(fd_) != 0) fail_errno("fsync failed", errno);
  std::FILE* f = file_;
  file_ = nullptr;
  fd_ = -1;
  if (std::fclose(f) != 0) fail_errno("close failed", errno);
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) fail_errno("rename over the target failed", errno);
  committed_ = true;
  // The rename is durable only once the directory entry is: fsync the directory too.
  DIR* dir = ::opendir(dir_of(path_).c_str());
  if (!dir) fail_errno("cannot open the directory to fsync it", errno);
  const int rc = ::fsync(::dirfd(dir));
  const int err = errno;
  ::closedir(dir);
  if (rc != 0 && err != EINVAL) fail_errno("fsync of the directory failed", err);
}

}  // namespace flock::io
