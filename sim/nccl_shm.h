// The simulated NCCL's transport: one POSIX shared-memory segment per communicator clique, named
// by the unique id, that every rank maps (ranks in one process and ranks in other processes
// alike). It holds a header (who joined, a barrier, each rank's description of its current
// collective), one slot per rank through which collectives exchange their data, and one mailbox
// per ordered pair of ranks for send/recv. Payloads larger than a slot or mailbox go through in
// chunks. Waiting is on one futex word (`bell`), bumped on every change a rank may wait for.
//
// Limits: kMaxRanks ranks; a collective moves at most kSlotBytes per rank per round and a send at
// most kMailboxBytes per chunk (larger ones take several rounds). The segment is sized for its
// rank count (8 ranks: 8 * 4 MiB + 64 * 512 KiB = 64 MiB of address space); tmpfs commits only the
// pages touched, so small payloads cost little of /dev/shm.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace sim::nccl {

constexpr int kMaxRanks = 64;
constexpr size_t kSlotBytes = size_t(4) << 20;
constexpr size_t kMailboxBytes = size_t(512) << 10;

// What a rank is about to do at collective number `seq`; the others compare it with theirs.
struct OpDesc {
  uint32_t kind, dtype, op, root;
  uint64_t count, seq;
};

struct Mailbox {
  std::atomic<uint32_t> full;  // 1: a chunk waits for the receiver; 0: the sender may write
  uint32_t dtype;
  uint64_t total;  // bytes of the whole message the chunk belongs to
  uint64_t chunk;  // bytes in this chunk
  uint64_t pad[5];
};

struct Header {
  std::atomic<uint32_t> nranks;  // set by the first rank to join; the others must agree
  std::atomic<uint32_t> bell;    // the futex word
  std::atomic<uint32_t> joined;  // ranks that have initialised
  std::atomic<uint32_t> left;    // ranks whose communicator is gone; the last one unlinks
  std::atomic<uint32_t> arrived;
  std::atomic<uint32_t> phase;  // barrier generation
  std::atomic<uint32_t> present[kMaxRanks];
  OpDesc desc[kMaxRanks];
};
static_assert(std::atomic<uint32_t>::is_always_lock_free, "shared-memory atomics must be lock-free");
constexpr size_t kHeaderBytes = 16384;
static_assert(sizeof(Header) <= kHeaderBytes, "header too large");

// Bytes the segment of an n-rank clique needs.
size_t segment_bytes(int nranks);

// A fresh segment's name ("/flockml-nccl-<pid>-<random>"), created empty (header only) so the
// name is taken. Empty string on failure. First removes stale segments of dead processes.
std::string create_segment();

// One rank's mapping of a clique's segment. The name is unlinked by the last rank to join; if some
// never join, by the destructor of the last rank to go, by the creating process at its exit, or
// by a later create_segment once the creating process is dead (stale segments).
class Segment {
 public:
  // Opens and maps `name` for `nranks`; null with *why on failure.
  static std::unique_ptr<Segment> open(const std::string& name, int nranks, std::string* why);
  ~Segment();
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;

  Header& header() { return *static_cast<Header*>(base_); }
  unsigned char* slot(int rank) { return static_cast<unsigned char*>(base_) + kHeaderBytes + size_t(rank) * kSlotBytes; }
  Mailbox& mailbox(int from, int to);
  unsigned char* mailbox_data(int from, int to) { return reinterpret_cast<unsigned char*>(&mailbox(from, to)) + sizeof(Mailbox); }
  const std::string& name() const { return name_; }
  int nranks() const { return nranks_; }

  // Removes the name (every rank has joined: nobody needs it to find the segment any more, and a
  // rank that dies later then leaves nothing behind in /dev/shm). Mappings stay valid.
  void unlink_name();
  // Wakes every waiter of the clique (all processes) after a change.
  void ring();
  // Sleeps until the bell moves from `seen` or `ms` milliseconds pass (no busy wait).
  void wait_bell(uint32_t seen, int ms);

 private:
  Segment() = default;
  std::string name_;
  int nranks_ = 0;
  void* base_ = nullptr;
  size_t bytes_ = 0;
};

// Unlinks every segment this process created that is still named (at exit: an id nobody used,
// or one whose ranks never all joined, can no longer be completed once its creator is gone).
void unlink_unused_segments();

}  // namespace sim::nccl
