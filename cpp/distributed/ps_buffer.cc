#include "ps_buffer.h"
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cerrno>
#include <cstring>
#include "../error.h"
#include "shm_sys.h"

namespace flock::dist {
namespace {

constexpr const char* kPrefix = "/flockml-ps-";
constexpr size_t kMaxBytes = size_t(1) << 40;

[[noreturn]] void io_fail(const char* what, const std::string& name, int err) {
  fail(Code::IO, "parameter server: ", what, " shared memory '", name, "' failed: ", std::strerror(err));
}

void check(const std::string& name, size_t bytes) {
  if (!PsBuffer::valid_name(name)) fail(Code::Arg, "parameter server: '", name, "' is not a parameter-server shared-memory name");
  if (bytes == 0 || bytes > kMaxBytes) fail(Code::Range, "parameter server: a shared-memory buffer of ", bytes, " bytes");
}

}  // namespace

bool PsBuffer::valid_name(const std::string& name) {
  const size_t n = std::strlen(kPrefix);
  if (name.size() <= n || name.size() > n + 96 || name.compare(0, n, kPrefix) != 0) return false;
  for (size_t i = n; i < name.size(); ++i) {
    const char c = name[i];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || c == '-')) return false;
  }
  return true;
}

std::shared_ptr<PsBuffer> PsBuffer::create(const std::string& name, size_t bytes) {
  check(name, bytes);
  const int fd = flock_sys::shm_open_rw(name.c_str(), true);
  if (fd < 0) io_fail("creating", name, errno);
  const flock_sys::Mapping m = flock_sys::map_shared(fd, bytes, true);
  if (!m.base) {
    shm_unlink(name.c_str());
    io_fail(m.step, name, m.err);
  }
  return std::shared_ptr<PsBuffer>(new PsBuffer(m.base, bytes));
}

std::shared_ptr<PsBuffer> PsBuffer::open(const std::string& name, size_t bytes) {
  check(name, bytes);
  const int fd = flock_sys::shm_open_rw(name.c_str(), false);
  if (fd < 0) io_fail("opening", name, errno);
  const flock_sys::Mapping m = flock_sys::map_shared(fd, bytes, false);
  if (!m.base && m.err == 0)
    fail(Code::IO, "parameter server: shared memory '", name, "' has ", m.size, " bytes, expected ", bytes);
  if (!m.base) io_fail(m.step, name, m.err);
  return std::shared_ptr<PsBuffer>(new PsBuffer(m.base, bytes));
}

void PsBuffer::unlink(const std::string& name) {
  if (valid_name(name)) shm_unlink(name.c_str());
}

PsBuffer::~PsBuffer() { munmap(base_, bytes_); }

}  // namespace flock::dist
