#include "atomic_file.h"
#include <dirent.h>
#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <system_error>
#include <thread>
#include "../error.h"
#include "sys_file.h"

namespace flock::io {
namespace {

// Large transfers go in pieces: one write() of more than 2 GiB is cut short by Linux anyway.
constexpr size_t kChunk = size_t(64) << 20;
// Staging for direct writes. Measured with dd on the ext4 VM disk: 4 MiB direct writes reached
// 2.1 GB/s, 16 and 64 MiB ones 1.4-1.5 GB/s.
constexpr size_t kStageBytes = size_t(4) << 20;

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

bool pwrite_all(int fd, const void* data, size_t bytes, uint64_t offset) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::pwrite(fd, p, std::min(bytes, kChunk), static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += n;
    offset += static_cast<uint64_t>(n);
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
  direct_ = true;
  fd_ = flock_sys::create_exclusive(tmp_.c_str(), &direct_);  // exclusive: never another writer's file
  if (fd_ < 0) fail_errno("cannot create a temporary file in its directory", errno);
  if (direct_) {
    stage_ = static_cast<char*>(std::aligned_alloc(kBlockAlign, kStageBytes));
    if (!stage_) {
      ::close(fd_);
      ::unlink(tmp_.c_str());
      fail(Code::OOM, op, ": ", path, ": out of memory for the write buffer");
    }
  }
}

AtomicFile::~AtomicFile() {
  std::free(stage_);
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(tmp_.c_str());
}

std::FILE* open_for_read(const std::string& path) { return std::fopen(path.c_str(), "rbe"); }

void AtomicFile::fail_errno(const char* what, int err) const {
  fail(Code::IO, op_, ": ", path_, ": ", what, ": ", std::strerror(err));
}

void AtomicFile::put(const void* data, size_t bytes) {
  if (!pwrite_all(fd_, data, bytes, offset_)) {
    // A file system may accept O_DIRECT at open and refuse the transfer: go through the cache.
    if (!direct_ || errno != EINVAL || !flock_sys::clear_direct(fd_)) fail_errno("write failed", errno);
    direct_ = false;
    if (!pwrite_all(fd_, data, bytes, offset_)) fail_errno("write failed", errno);
  }
  offset_ += bytes;
}

void AtomicFile::flush_stage() {
  if (staged_ == 0) return;
  put(stage_, staged_);
  staged_ = 0;
}

void AtomicFile::write(const void* data, size_t bytes) {
  const char* p = static_cast<const char*>(data);
  if (!stage_) {
    put(p, bytes);
    return;
  }
  while (bytes > 0) {
    const bool aligned = reinterpret_cast<uintptr_t>(p) % kBlockAlign == 0 && staged_ % kBlockAlign == 0;
    if (aligned && bytes >= kBlockAlign) {
      flush_stage();  // whole blocks, so the file position stays aligned
      const size_t n = bytes - bytes % kBlockAlign;
      put(p, n);
      p += n;
      bytes -= n;
      continue;
    }
    const size_t n = std::min(bytes, kStageBytes - staged_);
    std::memcpy(stage_ + staged_, p, n);
    staged_ += n;
    p += n;
    bytes -= n;
    if (staged_ == kStageBytes) flush_stage();
  }
}

namespace {

// The last close of a replaced file frees its blocks: 0.15-0.2 s for 1 GiB on ext4 with discard
// (measured: rename over the previous save took that long). The save holds the old file open
// across the rename and closes it on a thread of its own, so that cost stays out of its latency.
void close_later(int fd) {
  try {
    std::thread([fd] { ::close(fd); }).detach();
  } catch (const std::system_error&) {
    ::close(fd);
  }
}

}  // namespace

void AtomicFile::commit() {
  if (stage_ && staged_ > 0) {
    const uint64_t size = offset_ + staged_;
    if (direct_) {
      // The tail is padded to a whole block for the transfer, then cut back to the true size.
      const size_t padded = (staged_ + kBlockAlign - 1) / kBlockAlign * kBlockAlign;
      std::memset(stage_ + staged_, 0, padded - staged_);
      staged_ = padded;
    }
    flush_stage();
    if (offset_ != size && ::ftruncate(fd_, static_cast<off_t>(size)) != 0) fail_errno("truncate failed", errno);
  }
  if (::fsync(fd_) != 0) fail_errno("fsync failed", errno);
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail_errno("close failed", errno);
  const int old = flock_sys::open_read(path_.c_str());
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
    const int err = errno;
    if (old >= 0) ::close(old);
    fail_errno("rename over the target failed", err);
  }
  committed_ = true;
  if (old >= 0) close_later(old);
  // The rename is durable only once the directory entry is: fsync the directory too.
  DIR* dir = ::opendir(dir_of(path_).c_str());
  if (!dir) fail_errno("cannot open the directory to fsync it", errno);
  const int rc = ::fsync(::dirfd(dir));
  const int err = errno;
  ::closedir(dir);
  if (rc != 0 && err != EINVAL) fail_errno("fsync of the directory failed", err);
}

}  // namespace flock::io
