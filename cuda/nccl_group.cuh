// The `nccl` backend's pieces, shared by its files: the group (nccl_group.cu: one communicator on
// one device, its collectives and its failure), the clique (nccl_clique.cu: the groups of one
// process, whose posts are matched and launched together off the JS thread), the watcher
// (nccl_watcher.cu: completion, timeouts, NCCL's asynchronous errors) and creation
// (nccl_init.cu: non-blocking communicator init with a timeout).
//
// One collective, in order:
//   1. post (JS thread): the group's compute stream records `start` (its inputs are ready) and
//      then waits at the group's StreamGate for the post's number, so work queued after the post
//      cannot run ahead of the collective and read un-reduced data;
//   2. the clique queues the post; once every member has posted its next one, the batch goes to
//      the clique's launcher thread, which makes the NCCL calls (communication streams waiting on
//      `start`, between ncclGroupStart/End for several members) on non-blocking communicators,
//      polls until NCCL has queued them, records `finish` and has the communication stream open
//      the gate after the collective;
//   3. each group's watcher polls `finish`, NCCL's asynchronous error and the timeout (which
//      covers a post still waiting for its peers, naming the devices that never posted) and
//      settles `done`. On a failure the communicators are aborted and the gates opened, so no
//      stream or thread waits forever.
// A group made by init_rank (one per process) is a clique of one.
#pragma once
#include <cuda_runtime.h>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>
#include "common.cuh"
#include "device_guard.cuh"
#include "distributed/nccl.h"
#include "distributed/process_group.h"
#include "stream_gate.cuh"

namespace flock::dist::nccl_group {

using Clock = std::chrono::steady_clock;
constexpr auto kPollInterval = std::chrono::milliseconds(1);
constexpr auto kDrainLimit = std::chrono::seconds(1);

const nccl::Api& api();  // the loaded library, or ERR_NCCL saying why not
void check_nccl(const nccl::Api& a, nccl::Result r, const char* what);
nccl::DataType nccl_type(DType t, const char* op);
nccl::RedOp nccl_op(ReduceOp op);
void check_visible(int device);
cudaEvent_t new_event();
// `e` as `op`'s error: the message names the op once (an error made for that op already does).
inline StreamError named(const char* op, const StreamError& e) {
  const std::string prefix = std::string(op) + ": ";
  if (e.message.compare(0, prefix.size(), prefix) == 0) return e;
  return StreamError{e.code, prefix + e.message};
}

// A completion that several paths may reach (the watcher, a failure, destruction); the first wins.
class Once {
 public:
  explicit Once(Done d) : done_(std::move(d)) {}
  void operator()(std::optional<StreamError> err) {
    if (!fired_.exchange(true)) done_(std::move(err));
  }

 private:
  std::atomic<bool> fired_{false};
  Done done_;
};
using OncePtr = std::shared_ptr<Once>;

// One NCCL call and the tensors it reads and writes.
struct Launch {
  const char* op = "";
  std::vector<Tensor> tensors;
  // Null when there is nothing to move (empty tensors): every rank skips alike, shapes agree.
  std::function<nccl::Result(const nccl::Api&, nccl::Comm, cudaStream_t)> call;
  // What the members of one process must agree on to form one collective (op, count, dtype, ...).
  std::string signature;
};

// A collective this group posted and the watcher has not seen finish.
struct InFlight {
  const char* op = "";
  uint32_t seq = 0;              // its number at the group's gate
  cudaEvent_t start = nullptr;   // on the compute stream, at the post
  cudaEvent_t finish = nullptr;  // on the communication stream, after the NCCL call
  std::vector<Tensor> tensors;
  OncePtr done;  // null once settled by a failure
  Clock::time_point posted;
  bool issued = false;                     // NCCL has been called (its kernels may run)
  bool launched = false;                   // `finish` recorded: the watcher may poll it
  std::optional<Clock::time_point> began;  // when the watcher first saw `start` complete
};

class Nccl;

// Jobs for a clique's launcher thread; shared with the thread so it outlives the clique if the
// last group is dropped on that thread.
struct LaunchQueue {
  std::mutex m;
  std::condition_variable cv;
  std::deque<std::function<void()>> jobs;
  bool stopping = false;
};

// The groups of one process (ncclCommInitAll's, or init_rank's single one). One thread may not
// issue their NCCL calls one after another (each may wait for the others), so each member's posts
// queue here, and once every member has posted its next one they are launched together on the
// launcher thread.
class Clique {
 public:
  Clique(std::vector<int> devices, bool local);
  ~Clique();
  Clique(const Clique&) = delete;
  Clique& operator=(const Clique&) = delete;

  bool local() const { return local_; }
  void join(int rank, const std::shared_ptr<Nccl>& g);
  void leave(int rank);
  void post(int rank, Launch l, OncePtr done, uint32_t seq, cudaEvent_t start);
  // Fails every member (and their queued posts): one collective across the clique cannot go on
  // without all of its devices.
  void fail(const StreamError& e);
  // The devices whose members have not posted the collective the others wait in ("cuda:1, cuda:3").
  std::string not_posted();

 private:
  struct Post {
    Launch launch;
    OncePtr done;
    uint32_t seq;
    cudaEvent_t start;
  };
  const std::vector<int> devices_;
  const bool local_;
  std::mutex m_;
  std::vector<std::weak_ptr<Nccl>> members_;
  std::vector<std::deque<Post>> queues_;
  std::shared_ptr<LaunchQueue> launches_;
  std::thread launcher_;
};

class Nccl final : public ProcessGroup, public std::enable_shared_from_this<Nccl> {
 public:
  Nccl(int rank, int size, int device, int timeout_ms, std::shared_ptr<Clique> clique);
  ~Nccl() override;

  void set_ready(OncePtr ready) {
    std::lock_guard<std::mutex> lk(m_);
    ready_ = std::move(ready);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int device() const { return device_; }
  const char* backend() const override { return "nccl"; }
  bool orders_on_device() const override { return true; }
  void set_timeout(int ms) override { timeout_ms_ = ms; }
  int timeout_ms() const { return timeout_ms_; }
  bool failed() {
    std::lock_guard<std::mutex> lk(m_);
    return failed_.has_value();
  }

  void allreduce(Tensor t, ReduceOp op, Done done) override;
  void broadcast(Tensor t, int root, Done done) override;
  void allgather(Tensor in, Tensor out, Done done) override;
  void reduce_scatter(Tensor in, Tensor out, ReduceOp op, Done done) override;
  void send(Tensor t, int dst, Done done) override;
  void recv(Tensor t, int src, Done done) override;
  void barrier(Done done) override;
  void abort(const std::string& why) override { fail_group(StreamError{Code::Disposed, why}); }

  // The init thread hands over the communicator. False (and the communicator aborted) when the
  // group failed or was destroyed while it was being made.
  bool attach(nccl::Comm c);
  // Fails every member of the clique.
  void fail_group(const StreamError& e) { clique_->fail(e); }
  // Settles ready (if still pending) and every collective of this group with `e`, refuses all
  // later ones, aborts the communicator and opens the gate. The first failure is the one reported.
  void fail_self(const StreamError& e);
  // Settles one post that will never be launched (its batch was refused) and lets its stream go.
  void drop(uint32_t seq, const StreamError& e);

  // One member's part of a batch; issue() runs on the launcher thread (nccl_clique.cu).
  struct Member {
    std::shared_ptr<Nccl> g;
    Launch launch;
    OncePtr done;
    uint32_t seq;
    cudaEvent_t start;
  };
  static void issue(std::vector<Member>& ms);

 private:
  void submit(Launch l, Done done);
  // This group's place in its clique: its rank in a clique of the process's groups, 0 in the
  // clique of one that a group of several processes (init_rank) has.
  int slot() const { return clique_->local() ? rank_ : 0; }
  void watch();  // nccl_watcher.cu
  // The reason a collective cannot be issued now, if any. issue_m_ held.
  std::optional<StreamError> refusal();
  // Marks post `seq` issued / launched (with its finish event); see issue().
  void mark_issued(uint32_t seq);
  void mark_launched(uint32_t seq, cudaEvent_t finish);
  // NCCL's asynchronous error for this group's communicator, as a StreamError; none while it has none.
  std::optional<StreamError> async_error(const std::string& where);
  void check_tensor(const Tensor& t, const char* op) const;
  void check_rank(int r, const char* op, const char* name) const;
  void check_p2p(const Tensor& t, int peer, const char* op, const char* name) const;

  const int rank_, size_, device_;
  std::atomic<int> timeout_ms_;
  const std::shared_ptr<Clique> clique_;
  cudaStream_t side_ = nullptr;  // the communication stream
  cuda::StreamGate gate_;        // the compute stream waits here after each post (built on device_)

  // Held while NCCL is called on comm_ (launches, abort, error queries), so an abort never frees
  // the communicator under a call. Taken before m_. The communicator is non-blocking, so no call
  // made under it waits on a peer; the JS thread never takes it.
  std::mutex issue_m_;
  nccl::Comm comm_ = nullptr;

  std::mutex m_;
  std::condition_variable cv_;
  uint32_t next_seq_ = 0;
  std::deque<InFlight> inflight_;
  std::vector<InFlight> graveyard_;  // failed after issue: buffers kept until the events say so
  std::optional<StreamError> failed_;
  OncePtr ready_;
  bool stopping_ = false;
  std::thread watcher_;  // last: it starts once everything above exists
};

}  // namespace flock::dist::nccl_group
