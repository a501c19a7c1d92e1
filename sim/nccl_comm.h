// One rank of a simulated NCCL communicator: joining the clique's shared-memory segment, the
// calls queued on streams, and how they meet their peers' calls and compute (nccl_comm.cc).
//
// A collective runs on its stream's executor thread and holds the stream, as an NCCL kernel does:
// it stages this rank's data in its slot, waits at a barrier for every rank, computes its own
// output from all the slots, and waits at a second barrier so no slot is overwritten while a peer
// still reads it. Collectives meet by order (every rank must issue them in the same order, as
// NCCL requires); the first barrier also compares what each rank issued, so a mismatch (another
// collective, count, dtype, op or root at the same position) fails every rank's communicator
// with ncclInvalidUsage, reported by ncclCommGetAsyncError, instead of the hang or corruption a
// real NCCL would give; the outputs are left untouched and later calls do nothing. A collective
// that one rank never issues (or issues as a send/recv) hangs, as on NCCL, until the waiting
// communicator is aborted. Sends and recvs move through one mailbox per ordered pair of ranks,
// so they pair up by (peer, order); the calls of one ncclGroupStart/End batch progress together,
// so a rank may send to and receive from a peer in one group without deadlock.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>
#include "nccl_shm.h"
#include "nccl_types.h"

namespace sim::nccl {

enum class Kind : uint32_t { AllReduce = 1, Broadcast, AllGather, ReduceScatter, Send, Recv };
bool is_p2p(Kind k);

// One NCCL call as it was made (arguments already checked).
struct Call {
  Kind kind;
  const void* send;
  void* recv;
  size_t count;  // AllGather: per rank (sendcount); ReduceScatter: per rank (recvcount)
  int dtype;
  int op;        // reductions only
  int peer;      // Broadcast: root; Send/Recv: the peer
  uint64_t seq;  // collectives: this communicator's collective number
};

class Comm {
 public:
  // Joins the clique named by `segment` as `rank` of `nranks` on CUDA device `device`.
  // Null with *err and *why when the segment cannot be used or the rank is taken.
  static std::shared_ptr<Comm> join(const std::string& segment, int nranks, int rank, int device, ncclResult_t* err,
                                    std::string* why);
  ~Comm() = default;

  int rank() const { return rank_; }
  int nranks() const { return nranks_; }
  int device() const { return device_; }
  // Every rank has joined (the clique exists), whatever the readiness delay.
  bool all_joined();
  // What ncclCommGetAsyncError reports: a failure, else InProgress until every rank has joined
  // and the readiness delay has passed, else Success.
  ncclResult_t state();
  // Blocks until every rank has joined, then reports ready at once (a blocking init).
  void wait_joined();
  uint64_t next_seq() { return ++seq_; }
  // Fails the communicator (the first failure is the one reported).
  void fail(ncclResult_t e);
  // Wakes this rank's waiting calls, which then return without touching their outputs; every
  // later call does nothing.
  void abort();

  // Queued calls: begin() when queued, the batch's end on the stream (even if it never runs).
  void begin_call() { pending_.fetch_add(1); }
  void end_call();
  // Blocks until every queued call has run (ncclCommDestroy's flush).
  void wait_idle();
  // Runs one batch of calls (a group's, or a single call) on the stream's executor.
  void run(const std::vector<Call>& calls);

 private:
  Comm() = default;
  bool stopped();  // aborted, failed or the process exiting: calls end at once
  template <class Pred>
  bool wait_until(Pred done);
  bool barrier();
  void collective(const Call& c);
  void p2p(const Call* calls, size_t n);

  std::unique_ptr<Segment> seg_;
  int rank_ = 0, nranks_ = 0, device_ = 0;
  std::atomic<std::chrono::steady_clock::rep> ready_at_{0};  // steady_clock ticks
  std::atomic<bool> aborted_{false};
  std::atomic<int> error_{ncclSuccess};
  std::atomic<uint64_t> seq_{0};
  std::atomic<int> pending_{0};
  std::mutex idle_m_;
  std::condition_variable idle_cv_;
};

}  // namespace sim::nccl
