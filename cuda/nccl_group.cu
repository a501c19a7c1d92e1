// The `nccl` backend: a ProcessGroup over CUDA tensors, with NCCL opened at run time
// (cpp/distributed/nccl.h). Host code only; it lives with the CUDA sources because it needs the runtime
// and the device streams, and it fills in dist::nccl_backend() so a CPU-only build links without it.
//
// One collective, in order:
//   1. a task on the tensors' compute stream (so after every launch queued before it) records
//      `start` there, and the group's communication stream waits on it;
//   2. the NCCL call is issued on the communication stream, then `finish` is recorded there and
//      the compute stream waits on it, so later compute never touches the tensors too early;
//   3. the group's watcher thread polls `finish` (and NCCL's asynchronous error, and the timeout)
//      about every millisecond and settles the collective's `done`, then drops its tensors.
// Compute and communication overlap, and the host never blocks. On an NCCL error or a timeout the
// communicator is aborted: NCCL kernels waiting on a dead peer exit, the events complete, and no
// stream or thread waits forever.
//
// The communication stream belongs to the group (each group lives on one device), not to the
// device: groups sharing one stream would serialise, and ranks that interleave the collectives of
// two groups differently would deadlock each other.
#include <cuda_runtime.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>
#include "common.cuh"
#include "context.h"
#include "distributed/nccl.h"
#include "distributed/process_group.h"
#include "gpu_runtime.h"

namespace flock::dist {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kPollInterval = std::chrono::milliseconds(1);
constexpr auto kDrainLimit = std::chrono::seconds(1);

const nccl::Api& api() {
  std::string why;
  const nccl::Api* a = nccl::load(&why);
  if (!a) fail(Code::Nccl, "nccl unavailable: ", why);
  return *a;
}

void check_nccl(const nccl::Api& a, nccl::Result r, const char* what) {
  if (r != nccl::Success) fail(Code::Nccl, what, " failed: ", a.GetErrorString(r));
}

nccl::DataType nccl_type(DType t, const char* op) {
  switch (t) {
    case DType::f32: return nccl::Float32;
    case DType::f64: return nccl::Float64;
    case DType::bf16: return nccl::Bfloat16;
    case DType::f16: return nccl::Float16;
    case DType::i32: return nccl::Int32;
    case DType::i64: return nccl::Int64;
    default: break;
  }
  fail(Code::DType, op, ": the nccl backend takes f32, f64, bf16, f16, i32 and i64 tensors, got ", dtype_name(t),
       "; cast it first");
}

nccl::RedOp nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return nccl::Sum;
    case ReduceOp::Avg: return nccl::Avg;
    case ReduceOp::Max: return nccl::Max;
    case ReduceOp::Min: return nccl::Min;
    case ReduceOp::Prod: return nccl::Prod;
  }
  return nccl::Sum;
}

void check_visible(int device) {
  const int n = gpu_device_count();
  FLOCK_CHECK(device >= 0 && device < n && device < kMaxCudaDevices, Device, "nccl: device cuda:", device,
              " is not available (", n, " CUDA devices found)");
}

// Makes `device` current for a scope and restores the previous one after.
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    cudaGetDevice(&prev_);
    if (prev_ != device) cuda::check(cudaSetDevice(device), "cudaSetDevice");
  }
  ~DeviceScope() {
    int now = -1;
    cudaGetDevice(&now);
    if (now != prev_) cudaSetDevice(prev_);
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int prev_ = 0;
};

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

StreamError named(const char* op, const StreamError& e) { return StreamError{e.code, std::string(op) + ": " + e.message}; }

// One NCCL call and the tensors it reads and writes.
struct Launch {
  const char* op = "";
  std::vector<Tensor> tensors;
  // Null when there is nothing to move (empty tensors): every rank skips alike, shapes agree.
  std::function<nccl::Result(const nccl::Api&, nccl::Comm, cudaStream_t)> call;
  // What the members of one process must agree on to form one collective (op, count, dtype, ...).
  std::string signature;
};

// A launched collective the watcher has not seen finish.
struct InFlight {
  const char* op = "";
  cudaEvent_t start = nullptr, finish = nullptr;
  std::vector<Tensor> tensors;
  OncePtr done;                             // null once settled by a failure
  std::optional<Clock::time_point> began;   // when the watcher first saw `start` complete
};

cudaEvent_t new_event() {
  cudaEvent_t e = nullptr;
  cuda::check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate");
  return e;
}

class Nccl;

// The groups of one process made by ncclCommInitAll, one per device. One thread may not issue
// their NCCL calls one after another: each call may block until the others of its collective
// arrive, so the first would wait forever. Each member's collectives therefore queue here, and
// when every member has posted its next one they are launched together between ncclGroupStart
// and ncclGroupEnd, from a single task of the last poster's stream. Separate issuing threads were
// the other choice, but then the compute streams could not be made to wait on the completion
// events before the JS thread queues more work. A batch takes effect when its last member posts.
class Clique {
 public:
  explicit Clique(int n) : members_(n, nullptr), queues_(n) {}
  void join(int rank, Nccl* g) {
    std::lock_guard<std::mutex> lk(m_);
    members_[rank] = g;
  }
  void leave(int rank) {
    std::lock_guard<std::mutex> lk(m_);
    members_[rank] = nullptr;
  }
  void post(int rank, Launch l, OncePtr done);
  // Fails every member (and their queued posts): one collective across the clique cannot go on
  // without all of its devices.
  void fail(const StreamError& e);

 private:
  struct Post {
    Launch launch;
    OncePtr done;
  };
  std::mutex m_;
  std::vector<Nccl*> members_;
  std::vector<std::deque<Post>> queues_;
};

class Nccl final : public ProcessGroup, public std::enable_shared_from_this<Nccl> {
 public:
  Nccl(int rank, int size, int device, int timeout_ms, std::shared_ptr<Clique> clique)
      : rank_(rank), size_(size), device_(device), timeout_ms_(timeout_ms), clique_(std::move(clique)) {
    DeviceScope d(device_);
    // Non-blocking: the legacy default stream (a stray cudaMemcpy) must not hold up a collective
    // other ranks are already waiting in.
    cuda::check(cudaStreamCreateWithFlags(&side_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    watcher_ = std::thread([this] { watch(); });
  }

  ~Nccl() override {
    fail_group(StreamError{Code::Disposed, "the process group was destroyed"});
    if (clique_) clique_->leave(rank_);
    {
      std::lock_guard<std::mutex> lk(m_);
      stopping_ = true;
    }
    cv_.notify_all();
    if (watcher_.get_id() == std::this_thread::get_id()) watcher_.detach();
    else watcher_.join();
    DeviceScope d(device_);
    // Aborted NCCL kernels exit soon after ncclCommAbort; give them a moment before giving up.
    const auto deadline = Clock::now() + kDrainLimit;
    for (InFlight& f : graveyard_) {
      while (f.finish && cudaEventQuery(f.finish) == cudaErrorNotReady && Clock::now() < deadline)
        std::this_thread::sleep_for(kPollInterval);
      const bool drained = f.finish && cudaEventQuery(f.finish) != cudaErrorNotReady;
      if (f.start) cudaEventDestroy(f.start);
      if (drained) cudaEventDestroy(f.finish);
      // The communication stream may still read these buffers: keeping them allocated for good
      // is the only safe choice left.
      else new std::vector<Tensor>(std::move(f.tensors));
    }
    cudaStreamDestroy(side_);  // its resources go once the work on it has drained
    cudaGetLastError();
  }

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

  void allreduce(Tensor t, ReduceOp op, Done done) override {
    check_tensor(t, "allReduce");
    check_avg(op, t.dtype, "allReduce");
    const nccl::DataType dt = nccl_type(t.dtype, "allReduce");
    const size_t n = static_cast<size_t>(t.numel());
    Launch l{"allReduce", {t}, nullptr, sig("allReduce", n, t.dtype, static_cast<int>(op))};
    if (n) l.call = [t, n, dt, op](const nccl::Api& a, nccl::Comm c, cudaStream_t s) {
      return a.AllReduce(t.raw(), t.raw(), n, dt, nccl_op(op), c, s);
    };
    submit(std::move(l), std::move(done));
  }

  void broadcast(Tensor t, int root, Done done) override {
    check_tensor(t, "broadcast");
    check_rank(root, "broadcast", "root");
    const nccl::DataType dt = nccl_type(t.dtype, "broadcast");
    const size_t n = static_cast<size_t>(t.numel());
    Launch l{"broadcast", {t}, nullptr, sig("broadcast", n, t.dtype, root)};
    if (n) l.call = [t, n, dt, root](const nccl::Api& a, nccl::Comm c, cudaStream_t s) {
      return a.Broadcast(t.raw(), t.raw(), n, dt, root, c, s);
    };
    submit(std::move(l), std::move(done));
  }

  void allgather(Tensor in, Tensor out, Done done) override {
    check_tensor(in, "allGather");
    check_tensor(out, "allGather");
    FLOCK_CHECK(in.dtype == out.dtype, DType, "allGather: input is ", dtype_name(in.dtype), " but output is ", dtype_name(out.dtype));
    FLOCK_CHECK(out.numel() == in.numel() * size_, Shape, "allGather: output has ", out.numel(), " elements; expected ", size_,
                " x input (", in.numel(), ")");
    // NCCL's in-place form has the input at block `rank` of the output; any other overlap races.
    check_overlap(in, out, static_cast<int64_t>(rank_) * in.numel(), "allGather");
    const nccl::DataType dt = nccl_type(in.dtype, "allGather");
    const size_t n = static_cast<size_t>(in.numel());
    Launch l{"allGather", {in, out}, nullptr, sig("allGather", n, in.dtype, 0)};
    if (n) l.call = [in, out, n, dt](const nccl::Api& a, nccl::Comm c, cudaStream_t s) {
      return a.AllGather(in.raw(), out.raw(), n, dt, c, s);
    };
    submit(std::move(l), std::move(done));
  }

  void reduce_scatter(Tensor in, Tensor out, ReduceOp op, Done done) override {
    check_tensor(in, "reduceScatter");
    check_tensor(out, "reduceScatter");
    FLOCK_CHECK(in.dtype == out.dtype, DType, "reduceScatter: input is ", dtype_name(in.dtype), " but output is ", dtype_name(out.dtype));
    FLOCK_CHECK(in.numel() == out.numel() * size_, Shape, "reduceScatter: input has ", in.numel(), " elements; expected ", size_,
                " x output (", out.numel(), ")");
    check_avg(op, in.dtype, "reduceScatter");
    check_overlap(out, in, static_cast<int64_t>(rank_) * out.numel(), "reduceScatter");
    const nccl::DataType dt = nccl_type(in.dtype, "reduceScatter");
    const size_t n = static_cast<size_t>(out.numel());
    Launch l{"reduceScatter", {in, out}, nullptr, sig("reduceScatter", n, in.dtype, static_cast<int>(op))};
    if (n) l.call = [in, out, n, dt, op](const nccl::Api& a, nccl::Comm c, cudaStream_t s) {
      return a.ReduceScatter(in.raw(), out.raw(), n, dt, nccl_op(op), c, s);
    };
    submit(std::move(l), std::move(done));
  }

  void send(Tensor t, int dst, Done done) override {
    check_p2p(t, dst, "send", "dst");
    const nccl::DataType dt = nccl_type(t.dtype, "send");
    const size_t n = static_cast<size_t>(t.numel());
    Launch l{"send", {t}, nullptr, sig("send", n, t.dtype, dst)};
    if (n) l.call = [t, n, dt, dst](const nccl::Api& a, nccl::Comm c, cudaStream_t s) { return a.Send(t.raw(), n, dt, dst, c, s); };
    submit(std::move(l), std::move(done));
  }

  void recv(Tensor t, int src, Done done) override {
    check_p2p(t, src, "recv", "src");
    const nccl::DataType dt = nccl_type(t.dtype, "recv");
    const size_t n = static_cast<size_t>(t.numel());
    Launch l{"recv", {t}, nullptr, sig("recv", n, t.dtype, src)};
    if (n) l.call = [t, n, dt, src](const nccl::Api& a, nccl::Comm c, cudaStream_t s) { return a.Recv(t.raw(), n, dt, src, c, s); };
    submit(std::move(l), std::move(done));
  }

  void barrier(Done done) override {
    // A one-element allreduce: it completes on no rank before every rank has issued it. The
    // value is never read, so the buffer is left uninitialised.
    Tensor token = empty({1}, DType::f32, Device{DeviceType::CUDA, device_}, "barrier");
    Launch l{"barrier", {token}, nullptr, sig("barrier", 1, DType::f32, 0)};
    l.call = [token](const nccl::Api& a, nccl::Comm c, cudaStream_t s) {
      return a.AllReduce(token.raw(), token.raw(), 1, nccl::Float32, nccl::Sum, c, s);
    };
    submit(std::move(l), std::move(done));
  }

  void abort(const std::string& why) override { fail_group(StreamError{Code::Disposed, why}); }

  // The init thread hands over the communicator. False (and the communicator aborted) when the
  // group failed or was destroyed while it was being made.
  bool attach(nccl::Comm c) {
    {
      std::lock_guard<std::mutex> ik(issue_m_);
      std::lock_guard<std::mutex> lk(m_);
      if (!failed_) {
        comm_ = c;
        return true;
      }
    }
    nccl::load(nullptr)->CommAbort(c);
    return false;
  }

  // Fails this group (or, for a member of a clique, every member).
  void fail_group(const StreamError& e) {
    if (clique_) clique_->fail(e);
    else fail_self(e);
  }

  // Settles ready (if still pending) and every collective in flight with `e`, refuses all later
  // ones, and aborts the communicator. The first failure is the one reported.
  void fail_self(const StreamError& e) {
    std::vector<std::pair<const char*, OncePtr>> victims;
    OncePtr ready;
    StreamError first;
    {
      std::lock_guard<std::mutex> ik(issue_m_);
      {
        std::lock_guard<std::mutex> lk(m_);
        if (!failed_) failed_ = e;
        first = *failed_;
        ready = ready_;
        for (InFlight& f : inflight_) {
          victims.emplace_back(f.op, std::move(f.done));
          graveyard_.push_back(std::move(f));  // its tensors stay until its events complete
        }
        inflight_.clear();
      }
      if (comm_) {
        // ncclCommAbort (unlike ncclCommDestroy) does not wait for work that may never finish.
        nccl::load(nullptr)->CommAbort(comm_);
        comm_ = nullptr;
      }
    }
    cv_.notify_all();
    if (ready) (*ready)(first);
    for (auto& [op, done] : victims)
      if (done) (*done)(named(op, first));
  }

  // Issues one collective on each member (a single group, or every device of a clique) from a task
  // of a compute stream. Members are in rank order; each `compute` is its device's compute stream.
  struct Member {
    Nccl* g;
    cudaStream_t compute;
    Launch launch;
    OncePtr done;
  };
  static void issue(std::vector<Member>& ms);

 private:
  static std::string sig(const char* op, size_t n, DType t, int arg) {
    return std::string(op) + "/" + std::to_string(n) + "/" + dtype_name(t) + "/" + std::to_string(arg);
  }

  void check_tensor(const Tensor& t, const char* op) const {
    FLOCK_CHECK(!t.device().is_cpu(), Device, op, ": the nccl backend takes CUDA tensors, got one on cpu (move it with .to('cuda:",
                device_, "'), or use the ring backend for CPU tensors)");
    FLOCK_CHECK(t.device().index == device_, Device, op, ": this nccl group runs on cuda:", device_, " but the tensor is on ",
                t.device().str());
    nccl_type(t.dtype, op);
  }
  void check_avg(ReduceOp op, DType t, const char* name) const {
    if (op == ReduceOp::Avg && !is_floating(t)) fail(Code::DType, name, ": avg needs a floating dtype, got ", dtype_name(t));
  }
  void check_rank(int r, const char* op, const char* name) const {
    FLOCK_CHECK(r >= 0 && r < size_, Index, op, ": ", name, " rank ", r, " is outside a group of size ", size_);
  }
  void check_p2p(const Tensor& t, int peer, const char* op, const char* name) const {
    check_tensor(t, op);
    check_rank(peer, op, name);
    FLOCK_CHECK(peer != rank_, Arg, op, ": ", name, " is this rank (", peer, ")");
    FLOCK_CHECK(!clique_, Arg, op, ": the groups of one process (initLocalGroups) do not send to each other; copy with tensor.to('cuda:N')");
  }
  // `small` may alias `big` only when it sits exactly `at` elements into it (NCCL's in-place form).
  static void check_overlap(const Tensor& small, const Tensor& big, int64_t at, const char* op) {
    if (small.storage != big.storage || small.numel() == 0 || big.numel() == 0) return;
    const char* s0 = static_cast<const char*>(small.raw());
    const char* b0 = static_cast<const char*>(big.raw());
    const bool apart = s0 + small.nbytes() <= b0 || b0 + big.nbytes() <= s0;
    const bool in_place = s0 == b0 + at * static_cast<int64_t>(dtype_size(big.dtype));
    FLOCK_CHECK(apart || in_place, Arg, op, ": input and output overlap; in place, the input must be block ", at / small.numel(),
                " (this rank's) of the output");
  }

  // The reason a collective cannot be issued now, if any. issue_m_ held.
  std::optional<StreamError> refusal() {
    std::lock_guard<std::mutex> lk(m_);
    if (failed_) return StreamError{failed_->code, "the process group failed earlier: " + failed_->message};
    if (!comm_) return StreamError{Code::Nccl, "the process group is not ready (its communicator is still being created)"};
    return std::nullopt;
  }

  void submit(Launch l, Done done) {
    auto once = std::make_shared<Once>(std::move(done));
    if (clique_) return clique_->post(rank_, std::move(l), std::move(once));
    Stream& compute = Context::current().stream(Device{DeviceType::CUDA, device_});
    // The task runs on this thread (CudaStream only launches), but a weak reference keeps it
    // correct wherever it runs. It keeps its own copy of the tensors, released by the compute
    // stream once it has passed the collective.
    compute.enqueue(l.op, [w = weak_from_this(), l, once] {
      auto g = w.lock();
      if (!g) return (*once)(StreamError{Code::Disposed, std::string(l.op) + ": the process group was destroyed"});
      try {
        std::vector<Member> ms{Member{g.get(), cuda::current_stream(), l, once}};
        issue(ms);
      } catch (const Error& e) {
        (*once)(StreamError{e.code, std::string(l.op) + ": " + e.what()});
      }
    });
  }

  void watch();

  const int rank_, size_, device_;
  std::atomic<int> timeout_ms_;
  const std::shared_ptr<Clique> clique_;
  cudaStream_t side_ = nullptr;  // the communication stream

  // Held while NCCL is called on comm_ (launches, abort, error queries), so an abort from the
  // watcher never frees the communicator under a launch. Taken before m_. A launch only queues
  // work, except the first one to a peer, where NCCL may connect to it before returning.
  std::mutex issue_m_;
  nccl::Comm comm_ = nullptr;

  std::mutex m_;
  std::condition_variable cv_;
  std::deque<InFlight> inflight_;
  std::vector<InFlight> graveyard_;  // failed before finishing: buffers kept until the events say so
  std::optional<StreamError> failed_;
  OncePtr ready_;
  bool stopping_ = false;
  std::thread watcher_;  // last: it starts once everything above exists
};

void Nccl::issue(std::vector<Member>& ms) {
  const char* op = ms[0].launch.op;
  std::vector<std::unique_lock<std::mutex>> locks;
  for (Member& m : ms) locks.emplace_back(m.g->issue_m_);
  for (Member& m : ms) {
    if (auto why = m.g->refusal()) {
      locks.clear();
      for (Member& x : ms) (*x.done)(named(op, *why));
      return;
    }
  }
  const nccl::Api& a = *nccl::load(nullptr);
  const bool grouped = ms.size() > 1;
  std::vector<cudaEvent_t> start(ms.size(), nullptr), finish(ms.size(), nullptr);
  std::optional<StreamError> err;
  bool launched = false;
  try {
    for (size_t i = 0; i < ms.size(); ++i) {
      DeviceScope d(ms[i].g->device_);  // an event is recorded only on a stream of its own device
      start[i] = new_event();
      cuda::check(cudaEventRecord(start[i], ms[i].compute), "cudaEventRecord");
      cuda::check(cudaStreamWaitEvent(ms[i].g->side_, start[i], 0), "cudaStreamWaitEvent");
    }
    if (grouped) check_nccl(a, a.GroupStart(), "ncclGroupStart");
    try {
      for (Member& m : ms) {
        if (!m.launch.call) continue;
        launched = true;
        const nccl::Result r = m.launch.call(a, m.g->comm_, m.g->side_);
        if (r != nccl::Success)
          fail(Code::Nccl, "NCCL failed on rank ", m.g->rank_, " (cuda:", m.g->device_, "): ", a.GetErrorString(r));
      }
    } catch (...) {
      if (grouped) a.GroupEnd();  // closes the group this thread opened; its result adds nothing
      throw;
    }
    if (grouped) check_nccl(a, a.GroupEnd(), "ncclGroupEnd");
    for (size_t i = 0; i < ms.size(); ++i) {
      DeviceScope d(ms[i].g->device_);
      finish[i] = new_event();
      cuda::check(cudaEventRecord(finish[i], ms[i].g->side_), "cudaEventRecord");
      cuda::check(cudaStreamWaitEvent(ms[i].compute, finish[i], 0), "cudaStreamWaitEvent");
    }
  } catch (const Error& e) {
    err = StreamError{e.code, std::string(op) + ": " + e.what()};
  } catch (const std::exception& e) {
    err = StreamError{Code::Internal, std::string(op) + ": " + e.what()};
  }

  for (size_t i = 0; i < ms.size(); ++i) {
    Member& m = ms[i];
    InFlight f{op, start[i], finish[i], m.launch.tensors, err ? nullptr : m.done, std::nullopt};
    std::lock_guard<std::mutex> lk(m.g->m_);
    if (!err) {
      m.g->inflight_.push_back(std::move(f));
    } else if (launched) {
      // Part of it may be running: keep the buffers until an event after it completes (without
      // one they stay allocated for good, which is safe).
      if (!f.finish) {
        int prev = 0;
        cudaGetDevice(&prev);
        cudaEvent_t e = nullptr;
        if (cudaSetDevice(m.g->device_) == cudaSuccess && cudaEventCreateWithFlags(&e, cudaEventDisableTiming) == cudaSuccess &&
            cudaEventRecord(e, m.g->side_) == cudaSuccess)
          f.finish = e;
        else if (e)
          cudaEventDestroy(e);
        cudaSetDevice(prev);
        cudaGetLastError();
      }
      m.g->graveyard_.push_back(std::move(f));
    } else {
      if (f.start) cudaEventDestroy(f.start);
      if (f.finish) cudaEventDestroy(f.finish);
    }
  }
  for (Member& m : ms) m.g->cv_.notify_all();
  locks.clear();
  if (err) {
    // The ranks are out of step now (the others may have launched theirs): fail the group so
    // they see the abort instead of waiting out their timeouts.
    for (Member& m : ms) (*m.done)(err);
    ms[0].g->fail_group(*err);
  }
}

void Nccl::watch() {
  cudaSetDevice(device_);
  std::unique_lock<std::mutex> lk(m_);
  for (;;) {
    if (inflight_.empty() && graveyard_.empty()) {
      if (stopping_) return;
      cv_.wait(lk);
      continue;
    }
    if (stopping_ && inflight_.empty()) return;  // the destructor deals with the graveyard

    // The communication stream runs its collectives in order, so they finish in order.
    std::vector<std::pair<OncePtr, std::optional<StreamError>>> settled;
    std::vector<InFlight> finished;
    while (!inflight_.empty()) {
      InFlight& f = inflight_.front();
      const cudaError_t q = cudaEventQuery(f.finish);
      if (q == cudaErrorNotReady) {
        if (!f.began && cudaEventQuery(f.start) == cudaSuccess) f.began = Clock::now();
        break;
      }
      std::optional<StreamError> e;
      if (q != cudaSuccess) {
        cudaGetLastError();
        e = StreamError{Code::Cuda, std::string(f.op) + ": " + cudaGetErrorString(q)};
      }
      settled.emplace_back(std::move(f.done), std::move(e));
      finished.push_back(std::move(f));
      inflight_.pop_front();
    }
    for (auto it = graveyard_.begin(); it != graveyard_.end();) {
      if (it->finish && cudaEventQuery(it->finish) != cudaErrorNotReady) {
        finished.push_back(std::move(*it));
        it = graveyard_.erase(it);
      } else {
        ++it;
      }
    }
    cudaGetLastError();
    // The clock starts when the collective could start (its inputs were ready), so time spent
    // queued behind compute or earlier collectives is not counted against it.
    std::optional<StreamError> failure;
    const bool busy = !inflight_.empty();
    if (busy && inflight_.front().began) {
      const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - *inflight_.front().began).count();
      if (waited > timeout_ms_)
        failure = StreamError{Code::Timeout, std::string(inflight_.front().op) + " on rank " + std::to_string(rank_) + " (cuda:" +
                                                 std::to_string(device_) + ") did not finish within " + std::to_string(timeout_ms_.load()) +
                                                 " ms; a peer may have died or issued different collectives"};
    }
    lk.unlock();

    for (InFlight& f : finished) {
      if (f.start) cudaEventDestroy(f.start);
      if (f.finish) cudaEventDestroy(f.finish);
    }
    finished.clear();  // drops the tensors: their storages go back to the allocator
    for (auto& [done, e] : settled)
      if (done) (*done)(std::move(e));
    settled.clear();

    if (!failure && busy) {
      std::lock_guard<std::mutex> ik(issue_m_);
      if (comm_) {
        const nccl::Api& a = *nccl::load(nullptr);
        nccl::Result r = nccl::Success;
        if (a.CommGetAsyncError(comm_, &r) == nccl::Success && r != nccl::Success && r != nccl::InProgress)
          failure = StreamError{Code::Nccl, "NCCL reported an error on rank " + std::to_string(rank_) + " (cuda:" +
                                                std::to_string(device_) + "): " + a.GetErrorString(r)};
      }
    }
    if (failure) fail_group(*failure);

    lk.lock();
    if (!inflight_.empty() || !graveyard_.empty()) cv_.wait_for(lk, kPollInterval);
  }
}

void Clique::post(int rank, Launch l, OncePtr done) {
  std::vector<Post> batch;
  std::vector<Nccl*> members;
  {
    std::lock_guard<std::mutex> lk(m_);
    queues_[rank].push_back(Post{std::move(l), std::move(done)});
    for (auto& q : queues_)
      if (q.empty()) return;  // the batch waits for the members that have not posted yet
    for (auto& q : queues_) {
      batch.push_back(std::move(q.front()));
      q.pop_front();
    }
    members = members_;
  }
  for (size_t i = 0; i < batch.size(); ++i) {
    if (!members[i] || batch[i].launch.signature != batch[0].launch.signature) {
      const std::string why = !members[i] ? "a group of this process was destroyed"
                                          : "the groups of this process issued different collectives: " + batch[0].launch.signature +
                                                " on rank 0 but " + batch[i].launch.signature + " on rank " + std::to_string(i);
      for (Post& p : batch) (*p.done)(StreamError{Code::Arg, std::string(p.launch.op) + ": " + why});
      return;
    }
  }
  const int device = members[rank]->device();
  Stream& s = Context::current().stream(Device{DeviceType::CUDA, device});
  s.enqueue(batch[0].launch.op, [batch, members, device] {
    try {
      std::vector<Nccl::Member> ms;
      for (size_t i = 0; i < batch.size(); ++i) {
        const int d = members[i]->device();
        ms.push_back(Nccl::Member{members[i], d == device ? cuda::current_stream() : cuda::context_stream(d), batch[i].launch,
                                  batch[i].done});
      }
      Nccl::issue(ms);
    } catch (const Error& e) {
      for (const Post& p : batch) (*p.done)(StreamError{e.code, std::string(p.launch.op) + ": " + e.what()});
    }
  });
}

void Clique::fail(const StreamError& e) {
  std::vector<Post> orphans;
  std::lock_guard<std::mutex> lk(m_);
  for (auto& q : queues_) {
    for (Post& p : q) orphans.push_back(std::move(p));
    q.clear();
  }
  for (Post& p : orphans) (*p.done)(named(p.launch.op, e));
  for (Nccl* g : members_)
    if (g) g->fail_self(e);
}

std::shared_ptr<ProcessGroup> init_rank(int rank, int size, int device, const NcclId& id, int timeout_ms, Done ready) {
  FLOCK_CHECK(size >= 1 && rank >= 0 && rank < size, Arg, "nccl: rank ", rank, " is outside a world of size ", size);
  check_visible(device);
  const nccl::Api& a = api();
  auto g = std::make_shared<Nccl>(rank, size, device, timeout_ms, nullptr);
  auto once = std::make_shared<Once>(std::move(ready));
  g->set_ready(once);
  try {
    // ncclCommInitRank blocks until every rank has joined: never on the JS thread.
    std::thread([g, id, once, lib = &a] {
      try {
        cuda::check(cudaSetDevice(g->device()), "cudaSetDevice");  // the communicator binds to the current device
        nccl::UniqueId uid;
        std::copy(id.begin(), id.end(), uid.internal);
        nccl::Comm c = nullptr;
        const nccl::Result r = lib->CommInitRank(&c, g->size(), uid, g->rank());
        if (r != nccl::Success)
          fail(Code::Nccl, "ncclCommInitRank on rank ", g->rank(), " (cuda:", g->device(), ") failed: ", lib->GetErrorString(r));
        if (g->attach(c)) (*once)(std::nullopt);
      } catch (const Error& e) {
        g->fail_group(StreamError{e.code, e.what()});
      } catch (const std::exception& e) {
        g->fail_group(StreamError{Code::Internal, e.what()});
      }
    }).detach();
  } catch (...) {
    g->set_ready(nullptr);  // the caller reports this by throwing; ready must not also fire
    throw;
  }
  return g;
}

std::vector<std::shared_ptr<ProcessGroup>> init_all(const std::vector<int>& devices, int timeout_ms, Done ready) {
  const int n = static_cast<int>(devices.size());
  FLOCK_CHECK(n >= 1, Arg, "nccl: initLocalGroups needs at least one device");
  for (int i = 0; i < n; ++i) {
    check_visible(devices[i]);
    for (int j = 0; j < i; ++j)
      FLOCK_CHECK(devices[j] != devices[i], Arg, "nccl: device cuda:", devices[i], " is listed twice (NCCL takes each device once)");
  }
  const nccl::Api& a = api();
  auto clique = std::make_shared<Clique>(n);
  auto once = std::make_shared<Once>(std::move(ready));
  std::vector<std::shared_ptr<Nccl>> gs;
  for (int i = 0; i < n; ++i) {
    gs.push_back(std::make_shared<Nccl>(i, n, devices[i], timeout_ms, clique));
    clique->join(i, gs.back().get());
    gs.back()->set_ready(once);
  }
  try {
    std::thread([gs, devices, once, lib = &a] {
      try {
        std::vector<nccl::Comm> cs(gs.size(), nullptr);
        const nccl::Result r = lib->CommInitAll(cs.data(), static_cast<int>(cs.size()), devices.data());
        if (r != nccl::Success) fail(Code::Nccl, "ncclCommInitAll failed: ", lib->GetErrorString(r));
        bool ok = true;
        for (size_t i = 0; i < gs.size(); ++i) ok = gs[i]->attach(cs[i]) && ok;
        if (ok) (*once)(std::nullopt);
      } catch (const Error& e) {
        gs[0]->fail_group(StreamError{e.code, e.what()});
      } catch (const std::exception& e) {
        gs[0]->fail_group(StreamError{Code::Internal, e.what()});
      }
    }).detach();
  } catch (...) {
    for (auto& g : gs) g->set_ready(nullptr);
    throw;
  }
  return {gs.begin(), gs.end()};
}

const bool registered = [] {
  nccl_backend().init_rank = init_rank;
  nccl_backend().init_all = init_all;
  return true;
}();

}  // namespace
}  // namespace flock::dist
