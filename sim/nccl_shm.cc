// The simulated NCCL's shared-memory segments: naming, creating, mapping, unlinking, the futex
// bell, and the removal of segments left behind by processes that died.
#include "nccl_shm.h"
#include <dirent.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <random>
#include <vector>

namespace sim::nccl {
namespace {

constexpr const char* kPrefix = "flockml-nccl-";
constexpr size_t kMailboxStride = sizeof(Mailbox) + kMailboxBytes;
static_assert(sizeof(Mailbox) == 64, "mailbox header keeps its data 64-byte aligned");

struct Created {
  std::mutex m;
  std::vector<std::string> names;
};
Created& created() {
  static Created* c = new Created;  // never destroyed: the exit hook reads it
  return *c;
}

std::string os_error(const char* what, const std::string& name) {
  return std::string(what) + " " + name + ": " + std::strerror(errno);
}

// A segment of ours whose creating process is gone, and that no live communicator of that
// process can still need. Ranks of another process that mapped it keep their mapping; only the
// name goes, and with a dead creator no new rank will join.
void remove_stale_segments() {
  DIR* d = opendir("/dev/shm");
  if (!d) return;
  const size_t plen = std::strlen(kPrefix);
  while (dirent* e = readdir(d)) {
    if (std::strncmp(e->d_name, kPrefix, plen) != 0) continue;
    char* end = nullptr;
    const long pid = std::strtol(e->d_name + plen, &end, 10);
    if (pid <= 0 || *end != '-') continue;
    if (kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    shm_unlink((std::string("/") + e->d_name).c_str());
  }
  closedir(d);
}

long futex(std::atomic<uint32_t>* word, int op, uint32_t val, const timespec* ts) {
  // Not FUTEX_PRIVATE: the word lives in memory shared between processes.
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), op, val, ts, nullptr, 0);
}

}  // namespace

size_t segment_bytes(int nranks) {
  const size_t n = static_cast<size_t>(nranks);
  return kHeaderBytes + n * kSlotBytes + n * n * kMailboxStride;
}

std::string create_segment() {
  remove_stale_segments();
  static std::mt19937_64 rng{std::random_device{}() ^ static_cast<uint64_t>(getpid())};
  static std::mutex rng_m;
  for (int attempt = 0; attempt < 16; ++attempt) {
    uint64_t r;
    {
      std::lock_guard<std::mutex> lk(rng_m);
      r = rng();
    }
    char name[96];
    std::snprintf(name, sizeof(name), "/%s%d-%016llx", kPrefix, static_cast<int>(getpid()), static_cast<unsigned long long>(r));
    const int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0) {
      if (errno == EEXIST) continue;
      return "";
    }
    const bool sized = ftruncate(fd, static_cast<off_t>(kHeaderBytes)) == 0;
    close(fd);
    if (!sized) {
      shm_unlink(name);
      return "";
    }
    static const bool hooked = (std::atexit(unlink_unused_segments), true);
    (void)hooked;
    std::lock_guard<std::mutex> lk(created().m);
    created().names.push_back(name);
    return name;
  }
  return "";
}

void unlink_unused_segments() {
  std::lock_guard<std::mutex> lk(created().m);
  for (const std::string& name : created().names) {
    shm_unlink(name.c_str());  // ENOENT when its ranks all joined: fine
  }
  created().names.clear();
}

std::unique_ptr<Segment> Segment::open(const std::string& name, int nranks, std::string* why) {
  const int fd = shm_open(name.c_str(), O_RDWR, 0);
  if (fd < 0) {
    *why =
        os_error("cannot open the rendezvous segment", name) + " (an id from an ended job, or one never made by ncclGetUniqueId)";
    return nullptr;
  }
  std::unique_ptr<Segment> s(new Segment);
  s->name_ = name;
  s->nranks_ = nranks;
  // The header first: the ranks must agree on the size before the segment grows to fit it.
  void* head = mmap(nullptr, kHeaderBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (head == MAP_FAILED) {
    *why = os_error("cannot map", name);
    close(fd);
    return nullptr;
  }
  uint32_t expected = 0;
  Header& h = *static_cast<Header*>(head);
  const bool agree = h.nranks.compare_exchange_strong(expected, static_cast<uint32_t>(nranks)) || expected == uint32_t(nranks);
  munmap(head, kHeaderBytes);
  if (!agree) {
    *why = "ranks disagree on the communicator's size: " + std::to_string(expected) + " and " + std::to_string(nranks);
    close(fd);
    return nullptr;
  }
  const size_t bytes = segment_bytes(nranks);
  struct stat st {};
  // Every agreeing rank asks for the same size, so the segment only ever grows to it.
  if (fstat(fd, &st) != 0 || (static_cast<size_t>(st.st_size) < bytes && ftruncate(fd, static_cast<off_t>(bytes)) != 0)) {
    *why = os_error("cannot size", name);
    close(fd);
    return nullptr;
  }
  s->base_ = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (s->base_ == MAP_FAILED) {
    s->base_ = nullptr;
    *why = os_error("cannot map", name);
    return nullptr;
  }
  s->bytes_ = bytes;
  return s;
}

Segment::~Segment() {
  if (!base_) return;
  Header& h = header();
  if (h.left.fetch_add(1) + 1 == static_cast<uint32_t>(nranks_)) shm_unlink(name_.c_str());
  munmap(base_, bytes_);
}

Mailbox& Segment::mailbox(int from, int to) {
  unsigned char* p = static_cast<unsigned char*>(base_) + kHeaderBytes + size_t(nranks_) * kSlotBytes +
                     (size_t(from) * nranks_ + to) * kMailboxStride;
  return *reinterpret_cast<Mailbox*>(p);
}

void Segment::unlink_name() { shm_unlink(name_.c_str()); }

void Segment::ring() {
  header().bell.fetch_add(1, std::memory_order_acq_rel);
  futex(&header().bell, FUTEX_WAKE, INT_MAX, nullptr);
}

void Segment::wait_bell(uint32_t seen, int ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1000000L};
  futex(&header().bell, FUTEX_WAIT, seen, &ts);  // returns at once if the bell already moved
}

}  // namespace sim::nccl
