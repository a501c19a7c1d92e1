#include "shm_segment.h"
#include <linux/futex.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <new>
#include "../error.h"
#include "shm_sys.h"

namespace flock::dist {
namespace {

constexpr uint64_t kSegMagic = 0x666c6b73686d3031;  // "flkshm01"
constexpr size_t kPage = 4096;
constexpr size_t kCtlBytes = 128;  // per rank: its step on a line of its own, then two call headers
// Data slots: 1 MiB per rank up to 16 ranks, then 16 MiB shared out (at least 256 KiB each, and
// room for a reduceScatter round of one 8-byte element per rank in each half). Rounds of half a
// slot keep a round's data in cache: 4 MiB slots measured slower on 4 ranks at 16 and 64 MB
// (bench/allreduce.ts), 512 KiB no clearly faster.
constexpr size_t kSlotMax = size_t(1) << 20, kSlotMin = size_t(256) << 10, kSlotBudget = size_t(16) << 20;

static_assert(std::atomic<uint64_t>::is_always_lock_free && std::atomic<uint32_t>::is_always_lock_free,
              "shared-memory counters must be lock-free to work across processes");

struct RankCtl {
  alignas(64) std::atomic<uint64_t> step;
  alignas(64) CallHeader headers[2];
};
static_assert(sizeof(RankCtl) == kCtlBytes, "RankCtl layout");

size_t round_up(size_t v, size_t to) { return (v + to - 1) / to * to; }
size_t slot_bytes_for(int size) {
  const size_t s = std::clamp(kSlotBudget / static_cast<size_t>(size), kSlotMin, kSlotMax);
  return std::max(s / kPage * kPage, round_up(16 * static_cast<size_t>(size), kPage));
}
// send/recv pipes, one per ordered pair: 8 MiB shared out, 64 KiB to 1 MiB each. A message longer
// than its pipe streams through it as the receiver drains it (as through a socket's buffers).
constexpr size_t kPipeMax = size_t(1) << 20, kPipeMin = size_t(64) << 10, kPipeBudget = size_t(8) << 20;
constexpr size_t kPipeCtlBytes = 128;  // the bytes written, then the bytes read, each on a line of its own
size_t pipe_bytes_for(int size) {
  const size_t pairs = static_cast<size_t>(size) * static_cast<size_t>(size - 1);
  return std::clamp(kPipeBudget / pairs, kPipeMin, kPipeMax) / kPage * kPage;
}
size_t ctl_offset() { return kPage; }
size_t slots_offset(int size) { return round_up(kPage + kCtlBytes * static_cast<size_t>(size), kPage); }
size_t pipes_offset(int size) { return slots_offset(size) + slot_bytes_for(size) * static_cast<size_t>(size); }
size_t pipe_stride(int size) { return kPage + pipe_bytes_for(size); }  // the control lines padded to a page, then the data
size_t total_bytes(int size) {
  return pipes_offset(size) + pipe_stride(size) * static_cast<size_t>(size) * static_cast<size_t>(size - 1);
}

long futex(std::atomic<uint32_t>* addr, int op, uint32_t val, const timespec* ts) {
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(addr), op, val, ts, nullptr, 0);
}

[[noreturn]] void sys_fail(const char* what, const std::string& name, int err) {
  fail(Code::IO, "shared-memory transport: ", what, " '", name, "' failed: ", std::strerror(err),
       " (FLOCKML_TRANSPORT=tcp uses TCP between the ranks of this host instead)");
}

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace

struct ShmSegment::Layout {
  uint64_t magic;
  uint64_t nonce;
  int64_t size;
  uint64_t slot_bytes;
  alignas(64) std::atomic<uint32_t> generation;  // the futex word: moves on every post
  std::atomic<uint32_t> sleepers;                // ranks in (or about to enter) a futex wait
};

static_assert(sizeof(ShmSegment::Pipe) <= kPipeCtlBytes, "Pipe layout");

ShmSegment::ShmSegment(void* base, size_t bytes, int size)
    : base_(base), bytes_(bytes), size_(size), slot_bytes_(slot_bytes_for(size)), pipe_bytes_(pipe_bytes_for(size)) {}

ShmSegment::ShmSegment(ShmSegment&& o) noexcept
    : base_(o.base_), bytes_(o.bytes_), size_(o.size_), slot_bytes_(o.slot_bytes_), pipe_bytes_(o.pipe_bytes_) {
  o.base_ = nullptr;
}

ShmSegment::~ShmSegment() {
  if (base_) munmap(base_, bytes_);
}

ShmSegment ShmSegment::create(const std::string& name, int size, uint64_t nonce) {
  FLOCK_CHECK(size >= 2, Arg, "shared-memory transport: a group of ", size, " ranks needs no segment");
  const int fd = flock_sys::shm_open_rw(name.c_str(), true);
  if (fd < 0) sys_fail("creating", name, errno);
  const size_t bytes = total_bytes(size);
  const flock_sys::Mapping m = flock_sys::map_shared(fd, bytes, true);
  if (!m.base) {
    shm_unlink(name.c_str());
    sys_fail(m.step, name, m.err);
  }
  void* base = m.base;
  auto* l = new (base) Layout{};
  l->magic = kSegMagic;
  l->nonce = nonce;
  l->size = size;
  l->slot_bytes = slot_bytes_for(size);
  for (int r = 0; r < size; ++r) new (static_cast<char*>(base) + ctl_offset() + kCtlBytes * r) RankCtl{};
  ShmSegment seg(base, bytes, size);
  for (int a = 0; a < size; ++a)
    for (int b = 0; b < size; ++b)
      if (a != b) new (seg.pipe(a, b)) Pipe{};
  return seg;
}

ShmSegment ShmSegment::open(const std::string& name, int size, uint64_t nonce) {
  const int fd = flock_sys::shm_open_rw(name.c_str(), false);
  if (fd < 0) {
    if (errno == ENOENT)
      fail(Code::IO, "shared-memory transport: rank 0's segment '", name,
           "' is not visible here (another IPC namespace or /dev/shm?); FLOCKML_TRANSPORT=tcp uses TCP instead");
    sys_fail("opening", name, errno);
  }
  const size_t bytes = total_bytes(size);
  const flock_sys::Mapping m = flock_sys::map_shared(fd, bytes, false);
  if (!m.base && m.err == 0)
    fail(Code::IO, "shared-memory transport: segment '", name, "' has ", m.size, " bytes, expected ", bytes);
  if (!m.base) sys_fail(m.step, name, m.err);
  ShmSegment seg(m.base, bytes, size);
  const Layout* l = seg.layout();
  if (l->magic != kSegMagic || l->nonce != nonce || l->size != size)
    fail(Code::IO, "shared-memory transport: segment '", name, "' was not made by rank 0 of this group");
  return seg;
}

void ShmSegment::unlink(const std::string& name) { shm_unlink(name.c_str()); }

char* ShmSegment::slot(int rank) const {
  return static_cast<char*>(base_) + slots_offset(size_) + slot_bytes_ * static_cast<size_t>(rank);
}

ShmSegment::Pipe* ShmSegment::pipe(int src, int dst) const {
  // Pairs in order, the diagonal left out: src's pipes to the others, dst in order without src.
  const size_t k = static_cast<size_t>(src) * static_cast<size_t>(size_ - 1) + static_cast<size_t>(dst < src ? dst : dst - 1);
  return reinterpret_cast<Pipe*>(static_cast<char*>(base_) + pipes_offset(size_) + pipe_stride(size_) * k);
}

char* ShmSegment::pipe_data(int src, int dst) const { return reinterpret_cast<char*>(pipe(src, dst)) + kPage; }

static RankCtl* ctl(void* base, int rank) {
  return reinterpret_cast<RankCtl*>(static_cast<char*>(base) + ctl_offset() + kCtlBytes * static_cast<size_t>(rank));
}

CallHeader* ShmSegment::header(int rank, int64_t seq) const { return &ctl(base_, rank)->headers[seq & 1]; }

uint64_t ShmSegment::step(int rank) const { return ctl(base_, rank)->step.load(); }

void ShmSegment::post(int rank, uint64_t v) {
  ctl(base_, rank)->step.store(v);  // seq_cst: orders the slot writes before it, and the sleeper check after it
  notify();
}

void ShmSegment::notify() {
  layout()->generation.fetch_add(1);
  if (layout()->sleepers.load() > 0) futex(&layout()->generation, FUTEX_WAKE, INT_MAX, nullptr);
}

int ShmSegment::first_behind(uint64_t v) const {
  for (int r = 0; r < size_; ++r)
    if (step(r) < v) return r;
  return -1;
}

void ShmSegment::wait_all(uint64_t v, int timeout_ms, const std::function<void()>& alive, const std::vector<int>& ids) {
  wait_until([&] { return first_behind(v) < 0; }, timeout_ms, alive,
             [&] {
               fail(Code::Timeout, "rank ", ids[std::max(0, first_behind(v))], " sent nothing for ", timeout_ms,
                    " ms (is it alive and running the same collectives?)");
             });
}

void ShmSegment::wait_until(const std::function<bool()>& ready, int timeout_ms, const std::function<void()>& alive,
                            const std::function<void()>& timed_out) {
  // Spin a little (the peers are usually a few microseconds apart), then give the core away: ranks
  // may outnumber cores, and a spinning rank would hold up the very peer it waits for.
  for (int i = 0; i < 256; ++i) {
    if (ready()) return;
    cpu_relax();
  }
  for (int i = 0; i < 16; ++i) {
    if (ready()) return;
    sched_yield();
  }
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  Layout* l = layout();
  constexpr long kSliceNs = 5'000'000;  // how often a sleeper checks that its peers are alive
  for (;;) {
    // The sleeper count goes up before the generation is read, and a post moves the generation
    // before it reads the count: either the post sees a sleeper and wakes it, or the futex wait
    // sees the generation moved and returns at once.
    l->sleepers.fetch_add(1);
    const uint32_t gen = l->generation.load();
    if (ready()) {
      l->sleepers.fetch_sub(1);
      return;
    }
    const timespec ts{0, kSliceNs};
    futex(&l->generation, FUTEX_WAIT, gen, &ts);
    l->sleepers.fetch_sub(1);
    if (ready()) return;
    alive();
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
    if (ms >= timeout_ms) {
      timed_out();
      fail(Code::Timeout, "shared-memory transport: nothing arrived for ", timeout_ms, " ms");
    }
  }
}

}  // namespace flock::dist
