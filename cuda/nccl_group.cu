// The nccl group: one communicator on one CUDA device, its collectives, posting them to its clique,
// and failing. See nccl_group.cuh for the whole path of a collective.
#include "nccl_group.cuh"
#include <algorithm>
#include "context.h"
#include "gpu_runtime.h"

namespace flock::dist::nccl_group {

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
    case DType::f32:
      return nccl::Float32;
    case DType::f64:
      return nccl::Float64;
    case DType::bf16:
      return nccl::Bfloat16;
    case DType::f16:
      return nccl::Float16;
    case DType::i32:
      return nccl::Int32;
    case DType::i64:
      return nccl::Int64;
    default:
      break;
  }
  fail(Code::DType, op, ": the nccl backend takes f32, f64, bf16, f16, i32 and i64 tensors, got ", dtype_name(t),
       "; cast it first");
}

nccl::RedOp nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
      return nccl::Sum;
    case ReduceOp::Avg:
      return nccl::Avg;
    case ReduceOp::Max:
      return nccl::Max;
    case ReduceOp::Min:
      return nccl::Min;
    case ReduceOp::Prod:
      return nccl::Prod;
  }
  return nccl::Sum;
}

void check_visible(int device) {
  const int n = gpu_device_count();
  FLOCK_CHECK(device >= 0 && device < n && device < kMaxCudaDevices, Device, "nccl: device cuda:", device, " is not available (",
              n, " CUDA devices found)");
}

cudaEvent_t new_event() {
  cudaEvent_t e = nullptr;
  cuda::check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate");
  return e;
}

namespace {

std::string sig(const char* op, size_t n, DType t, int arg) {
  return std::string(op) + "/" + std::to_string(n) + "/" + dtype_name(t) + "/" + std::to_string(arg);
}

void check_avg(ReduceOp op, DType t, const char* name) {
  if (op == ReduceOp::Avg && !is_floating(t)) fail(Code::DType, name, ": avg needs a floating dtype, got ", dtype_name(t));
}
// `small` may alias `big` only when it sits exactly `at` elements into it (NCCL's in-place form).
void check_overlap(const Tensor& small, const Tensor& big, int64_t at, const char* op) {
  if (small.storage != big.storage || small.numel() == 0 || big.numel() == 0) return;
  const char* s0 = static_cast<const char*>(small.raw());
  const char* b0 = static_cast<const char*>(big.raw());
  const bool apart = s0 + small.nbytes() <= b0 || b0 + big.nbytes() <= s0;
  const bool in_place = s0 == b0 + at * static_cast<int64_t>(dtype_size(big.dtype));
  FLOCK_CHECK(apart || in_place, Arg, op, ": input and output overlap; in place, the input must be block ", at / small.numel(),
              " (this rank's) of the output");
}

}  // namespace

void Nccl::check_tensor(const Tensor& t, const char* op) const {
  FLOCK_CHECK(!t.device().is_cpu(), Device, op,
              ": the nccl backend takes CUDA tensors, got one on cpu (move it with .to('cuda:", device_,
              "'), or use the ring backend for CPU tensors)");
  FLOCK_CHECK(t.device().index == device_, Device, op, ": this nccl group runs on cuda:", device_, " but the tensor is on ",
              t.device().str());
  nccl_type(t.dtype, op);
}
void Nccl::check_rank(int r, const char* op, const char* name) const {
  FLOCK_CHECK(r >= 0 && r < size_, Index, op, ": ", name, " rank ", r, " is outside a group of size ", size_);
}
void Nccl::check_p2p(const Tensor& t, int peer, const char* op, const char* name) const {
  check_tensor(t, op);
  check_rank(peer, op, name);
  FLOCK_CHECK(peer != rank_, Arg, op, ": ", name, " is this rank (", peer, ")");
  FLOCK_CHECK(!clique_->local(), Arg, op,
              ": the groups of one process (initLocalGroups) do not send to each other; copy with tensor.to('cuda:N')");
}
void Nccl::allreduce(Tensor t, ReduceOp op, Done done) {
  check_tensor(t, "allReduce");
  check_avg(op, t.dtype, "allReduce");
  const nccl::DataType dt = nccl_type(t.dtype, "allReduce");
  const size_t n = static_cast<size_t>(t.numel());
  Launch l{"allReduce", {t}, nullptr, sig("allReduce", n, t.dtype, static_cast<int>(op))};
  if (n)
    l.call = [t, n, dt, op](const nccl::Api& a, nccl::Comm c, cudaStream_t s) {
      return a.AllReduce(t.raw(), t.raw(), n, dt, nccl_op(op), c, s);
    };
  submit(std::move(l), std::move(done));
}

void Nccl::broadcast(Tensor t, int root, Done done) {
  check_tensor(t, "broadcast");
  check_rank(root, "broadcast", "root");
  const nccl::DataType dt = nccl_type(t.dtype, "broadcast");
  const size_t n = static_cast<size_t>(t.numel());
  Launch l{"broadcast", {t}, nullptr, sig("broadcast", n, t.dtype, root)};
  if (n)
    l.call = [t, n, dt, root](const nccl::Api& a, nccl::Comm c, cudaStream_t s) {
      return a.Broadcast(t.raw(), t.raw(), n, dt, root, c, s);
    };
  submit(std::move(l), std::move(done));
}

void Nccl::allgather(Tensor in, Tensor out, Done done) {
  check_tensor(in, "allGather");
  check_tensor(out, "allGather");
  FLOCK_CHECK(in.dtype == out.dtype, DType, "allGather: input is ", dtype_name(in.dtype), " but output is ",
              dtype_name(out.dtype));
  FLOCK_CHECK(out.numel() == in.numel() * size_, Shape, "allGather: output has ", out.numel(), " elements; expected ", size_,
              " x input (", in.numel(), ")");
  // NCCL's in-place form has the input at block `rank` of the output; any other overlap races.
  check_overlap(in, out, static_cast<int64_t>(rank_) * in.numel(), "allGather");
  const nccl::DataType dt = nccl_type(in.dtype, "allGather");
  const size_t n = static_cast<size_t>(in.numel());
  Launch l{"allGather", {in, out}, nullptr, sig("allGather", n, in.dtype, 0)};
  if (n)
    l.call = [in, out, n, dt](const nccl::Api& a, nccl::Comm c, cudaStream_t s) {
      return a.AllGather(in.raw(), out.raw(), n, dt, c, s);
    };
  submit(std::move(l), std::move(done));
}

void Nccl::reduce_scatter(Tensor in, Tensor out, ReduceOp op, Done done) {
  check_tensor(in, "reduceScatter");
  check_tensor(out, "reduceScatter");
  FLOCK_CHECK(in.dtype == out.dtype, DType, "reduceScatter: input is ", dtype_name(in.dtype), " but output is ",
              dtype_name(out.dtype));
  FLOCK_CHECK(in.numel() == out.numel() * size_, Shape, "reduceScatter: input has ", in.numel(), " elements; expected ", size_,
              " x output (", out.numel(), ")");
  check_avg(op, in.dtype, "reduceScatter");
  check_overlap(out, in, static_cast<int64_t>(rank_) * out.numel(), "reduceScatter");
  const nccl::DataType dt = nccl_type(in.dtype, "reduceScatter");
  const size_t n = static_cast<size_t>(out.numel());
  Launch l{"reduceScatter", {in, out}, nullptr, sig("reduceScatter", n, in.dtype, static_cast<int>(op))};
  if (n)
    l.call = [in, out, n, dt, op](const nccl::Api& a, nccl::Comm c, cudaStream_t s) {
      return a.ReduceScatter(in.raw(), out.raw(), n, dt, nccl_op(op), c, s);
    };
  submit(std::move(l), std::move(done));
}

void Nccl::send(Tensor t, int dst, Done done) {
  check_p2p(t, dst, "send", "dst");
  const nccl::DataType dt = nccl_type(t.dtype, "send");
  const size_t n = static_cast<size_t>(t.numel());
  Launch l{"send", {t}, nullptr, sig("send", n, t.dtype, dst)};
  if (n) l.call = [t, n, dt, dst](const nccl::Api& a, nccl::Comm c, cudaStream_t s) { return a.Send(t.raw(), n, dt, dst, c, s); };
  submit(std::move(l), std::move(done));
}

void Nccl::recv(Tensor t, int src, Done done) {
  check_p2p(t, src, "recv", "src");
  const nccl::DataType dt = nccl_type(t.dtype, "recv");
  const size_t n = static_cast<size_t>(t.numel());
  Launch l{"recv", {t}, nullptr, sig("recv", n, t.dtype, src)};
  if (n) l.call = [t, n, dt, src](const nccl::Api& a, nccl::Comm c, cudaStream_t s) { return a.Recv(t.raw(), n, dt, src, c, s); };
  submit(std::move(l), std::move(done));
}

void Nccl::barrier(Done done) {
  // A one-element allreduce: it completes on no rank before every rank has issued it. The
  // value is never read, so the buffer is left uninitialised.
  Tensor token = empty({1}, DType::f32, Device{DeviceType::CUDA, device_}, "barrier");
  Launch l{"barrier", {token}, nullptr, sig("barrier", 1, DType::f32, 0)};
  l.call = [token](const nccl::Api& a, nccl::Comm c, cudaStream_t s) {
    return a.AllReduce(token.raw(), token.raw(), 1, nccl::Float32, nccl::Sum, c, s);
  };
  submit(std::move(l), std::move(done));
}

Nccl::Nccl(int rank, int size, int device, int timeout_ms, std::shared_ptr<Clique> clique)
    : rank_(rank), size_(size), device_(device), timeout_ms_(timeout_ms), clique_(std::move(clique)), gate_(device) {
  cuda::DeviceGuard d(device_);
  // Non-blocking: the legacy default stream (a stray cudaMemcpy) must not hold up a collective
  // other ranks are already waiting in.
  cuda::check(cudaStreamCreateWithFlags(&side_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  watcher_ = std::thread([this] { watch(); });
}

Nccl::~Nccl() {
  const StreamError gone{Code::Disposed, "the process group was destroyed"};
  fail_self(gone);  // the clique no longer reaches this group: its weak reference has expired
  clique_->fail(gone);
  clique_->leave(slot());
  {
    std::lock_guard<std::mutex> lk(m_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (watcher_.get_id() == std::this_thread::get_id())
    watcher_.detach();
  else
    watcher_.join();
  try {
    cuda::DeviceGuard d(device_);
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
      else
        new std::vector<Tensor>(std::move(f.tensors));
    }
    cudaStreamDestroy(side_);  // its resources go once the work on it has drained
  } catch (const Error&) {
    // the device cannot be made current: nothing more can be released
  }
  cudaGetLastError();
}

void Nccl::submit(Launch l, Done done) {
  auto once = std::make_shared<Once>(std::move(done));
  uint32_t seq = 0;
  {
    std::lock_guard<std::mutex> lk(m_);
    if (failed_)
      return (*once)(StreamError{failed_->code, std::string(l.op) + ": the process group failed earlier: " + failed_->message});
    if (inflight_.size() >= cuda::StreamGate::kSlots)
      return (*once)(StreamError{Code::Arg, std::string(l.op) + ": more than " + std::to_string(cuda::StreamGate::kSlots) +
                                                " collectives of one group are in flight; await some first"});
    seq = ++next_seq_;
  }
  // On the compute stream (a task runs on this thread and only launches): `start` marks the
  // inputs ready, then the stream waits at the gate until the collective has run, so later work
  // never reads un-reduced data.
  cudaEvent_t start = nullptr;
  auto err = std::make_shared<std::optional<StreamError>>();
  Stream& compute = Context::current().stream(Device{DeviceType::CUDA, device_});
  compute.enqueue(
      l.op,
      [this, seq, &start, err, op = l.op] {
        try {
          start = new_event();
          cudaStream_t s = cuda::current_stream();
          cuda::check(cudaEventRecord(start, s), "cudaEventRecord");
          gate_.wait(s, seq);
        } catch (const Error& e) {
          *err = StreamError{e.code, std::string(op) + ": " + e.what()};
        }
      },
      true);  // a control task: a failed stream still posts it, so the ranks stay in step
  if (!start || *err) {
    gate_.open(seq);  // its wait may be queued; nothing will ever launch it
    if (start) cudaEventDestroy(start);
    const StreamError e =
        *err ? **err : StreamError{Code::Internal, std::string(l.op) + ": the compute stream did not run the post"};
    (*once)(e);
    return fail_group(e);  // the gate wait may be queued: failing opens it
  }
  InFlight f;
  f.op = l.op;
  f.seq = seq;
  f.start = start;
  f.tensors = l.tensors;
  f.done = once;
  f.posted = Clock::now();
  {
    std::lock_guard<std::mutex> lk(m_);
    if (failed_) {
      gate_.open(seq);
      cudaEventDestroy(start);
      return (*once)(named(l.op, *failed_));
    }
    inflight_.push_back(std::move(f));
  }
  cv_.notify_all();
  clique_->post(slot(), std::move(l), std::move(once), seq, start);
}

bool Nccl::attach(nccl::Comm c) {
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

std::optional<StreamError> Nccl::refusal() {
  std::lock_guard<std::mutex> lk(m_);
  if (failed_) return StreamError{failed_->code, "the process group failed earlier: " + failed_->message};
  if (!comm_) return StreamError{Code::Nccl, "the process group is not ready (its communicator is still being created)"};
  return std::nullopt;
}

void Nccl::fail_self(const StreamError& e) {
  std::vector<std::pair<const char*, OncePtr>> victims;
  OncePtr ready;
  StreamError first;
  {
    std::lock_guard<std::mutex> ik(issue_m_);
    if (comm_) {
      // ncclCommAbort (unlike ncclCommDestroy) does not wait for work that may never finish.
      nccl::load(nullptr)->CommAbort(comm_);
      comm_ = nullptr;
    }
    std::lock_guard<std::mutex> lk(m_);
    if (!failed_) failed_ = e;
    first = *failed_;
    ready = ready_;
    for (InFlight& f : inflight_) {
      victims.emplace_back(f.op, std::move(f.done));
      gate_.open(f.seq);  // the compute stream goes on; the collective's error is reported
      if (f.issued && !f.finish) {
        // Its kernels may be running: an event after them says when the buffers are free (without
        // one they stay allocated for good, which is safe).
        try {
          cuda::DeviceGuard d(device_);
          cudaEvent_t ev = new_event();
          if (cudaEventRecord(ev, side_) == cudaSuccess)
            f.finish = ev;
          else
            cudaEventDestroy(ev);
        } catch (const Error&) {
        }
        cudaGetLastError();
      }
      if (f.issued) {
        graveyard_.push_back(std::move(f));
      } else if (f.start) {
        cudaEventDestroy(f.start);  // never launched: nothing on the device reads its buffers for it
      }
    }
    inflight_.clear();
  }
  cv_.notify_all();
  if (ready) (*ready)(first);
  for (auto& [op, done] : victims)
    if (done) (*done)(named(op, first));
}

void Nccl::drop(uint32_t seq, const StreamError& e) {
  OncePtr done;
  {
    std::lock_guard<std::mutex> lk(m_);
    for (auto it = inflight_.begin(); it != inflight_.end(); ++it) {
      if (it->seq != seq) continue;
      done = std::move(it->done);
      if (it->start) cudaEventDestroy(it->start);
      inflight_.erase(it);
      break;
    }
    gate_.open(seq);
  }
  cv_.notify_all();
  if (done) (*done)(e);
}

void Nccl::mark_issued(uint32_t seq) {
  std::lock_guard<std::mutex> lk(m_);
  for (InFlight& f : inflight_)
    if (f.seq == seq) f.issued = true;
}

void Nccl::mark_launched(uint32_t seq, cudaEvent_t finish) {
  {
    std::lock_guard<std::mutex> lk(m_);
    for (InFlight& f : inflight_) {
      if (f.seq != seq) continue;
      f.finish = finish;
      f.launched = true;
      finish = nullptr;
      break;
    }
    if (finish) {
      // It failed meanwhile and sits in the graveyard (or was dropped): give it this event, a
      // more exact one than the failure's.
      for (InFlight& f : graveyard_) {
        if (f.seq != seq) continue;
        if (f.finish) cudaEventDestroy(f.finish);
        f.finish = finish;
        finish = nullptr;
        break;
      }
    }
  }
  if (finish) cudaEventDestroy(finish);
  cv_.notify_all();
}

}  // namespace flock::dist::nccl_group
