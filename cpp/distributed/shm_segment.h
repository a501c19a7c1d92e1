// The shared-memory transport's segment: one POSIX shared-memory object per process group whose
// ranks all run on one host (as NCCL's SHM transport), mapped by every rank. It holds, per rank, a
// step counter, the call headers of its last two collectives and a data slot that the other ranks
// read from directly (shm_group.h runs the collectives over it), and a pipe per ordered pair of
// ranks for send/recv: a byte stream through a ring buffer, as a socket is.
//
// Rank 0 creates the object, named by the job's run id, and every other rank maps it during
// connect (over the ring's TCP links, which stay up for send/recv and failure detection); rank 0
// unlinks the name as soon as every rank has mapped it, so no name outlives the set-up whatever
// happens to the processes later (the memory goes when the last mapping does).
//
// Waits spin briefly, then sleep on a futex in the segment; every few milliseconds a sleeper
// checks that its peers' TCP connections are still open, so a rank that died is noticed.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>
#include "call_header.h"

namespace flock::dist {

class ShmSegment {
 public:
  // Rank 0 creates and maps `name` for `size` ranks; `nonce` is written into it so the others can
  // tell it from a stale object of the same name.
  static ShmSegment create(const std::string& name, int size, uint64_t nonce);
  // The other ranks map the object rank 0 created.
  static ShmSegment open(const std::string& name, int size, uint64_t nonce);
  static void unlink(const std::string& name);  // ENOENT is not an error
  ShmSegment(ShmSegment&& o) noexcept;
  ShmSegment& operator=(ShmSegment&&) = delete;
  ~ShmSegment();

  int size() const { return size_; }
  size_t slot_bytes() const { return slot_bytes_; }
  char* slot(int rank) const;
  // The header slot a collective numbered `seq` uses (two alternate: a fast rank writes its next
  // header while a slow one may still be reading the previous one).
  CallHeader* header(int rank, int64_t seq) const;

  // Publishes this rank's step `v` (after the writes it covers) and wakes sleeping peers.
  void post(int rank, uint64_t v);
  void notify();  // wakes sleeping peers (after a pipe's counter moved)

  // The pipe from `src` to `dst`: `written` bytes have gone in, `read` come out, of a stream kept
  // in the pipe_bytes() ring at pipe_data() (byte k at k % pipe_bytes()).
  struct Pipe {
    alignas(64) std::atomic<uint64_t> written;
    alignas(64) std::atomic<uint64_t> read;
  };
  Pipe* pipe(int src, int dst) const;
  char* pipe_data(int src, int dst) const;
  size_t pipe_bytes() const { return pipe_bytes_; }
  uint64_t step(int rank) const;

  // Waits until every rank's step is at least `v`. `alive` is called every few ms while waiting
  // (it throws to end the wait); after `timeout_ms` without every rank arriving it throws
  // ERR_TIMEOUT naming the first rank missing (as ids[rank], its rank in the process group).
  void wait_all(uint64_t v, int timeout_ms, const std::function<void()>& alive, const std::vector<int>& ids);
  // Waits, as wait_all does, until `ready()`; after `timeout_ms` calls `timed_out` (which throws).
  void wait_until(const std::function<bool()>& ready, int timeout_ms, const std::function<void()>& alive,
                  const std::function<void()>& timed_out);

 private:
  struct Layout;
  ShmSegment(void* base, size_t bytes, int size);
  Layout* layout() const { return static_cast<Layout*>(base_); }
  int first_behind(uint64_t v) const;  // -1: every rank is at v or later

  void* base_ = nullptr;
  size_t bytes_ = 0;
  int size_ = 0;
  size_t slot_bytes_ = 0;
  size_t pipe_bytes_ = 0;
};

}  // namespace flock::dist
