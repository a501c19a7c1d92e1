// The CUDA stream behind flock::Stream: one cudaStream_t per device and thread context, which only
// launches work (enqueue returns once the kernels are queued), keeps each task's closure until an
// event shows its work done, and serves sync points from a notifier thread.
#include <cuda_runtime.h>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>
#include "common.cuh"
#include "context.h"
#include "device.cuh"
#include "device_guard.cuh"
#include "profiler.h"
#include "stream_failure.h"
#include "stream_gate.cuh"

namespace flock::cuda {
namespace {

class CudaStream;
thread_local CudaStream* t_stream = nullptr;

// A cudaStream_t for one device. Tasks run on the calling thread and only *launch* work, so
// enqueue returns as soon as the kernels are queued. Each task's closure (which holds its
// tensors' storages) is kept until an event shows its work finished, so no buffer is freed
// while a kernel still reads it, and the number of such closures bounds the queue depth.
// Sync points are served by a notifier thread that waits on an event (blocking sync, no spin)
// and never runs inside a CUDA callback, so it may call CUDA freely.
class CudaStream final : public Stream {
 public:
  explicit CudaStream(int device) : device_(device) {
    check_device(device);
    DeviceGuard g(device_);
    check(cudaStreamCreate(&stream_), "cudaStreamCreate");
    check(cudaMalloc(&fault_dev_, sizeof(IndexFault)), "cudaMalloc");
    check(cudaMemset(fault_dev_, 0, sizeof(IndexFault)), "cudaMemset");
    check(cudaMallocHost(&fault_host_, sizeof(IndexFault) * kFaultSlots), "cudaMallocHost");
    notifier_ = std::thread([this] { notifier_loop(); });
  }

  ~CudaStream() override {
    {
      std::lock_guard<std::mutex> lk(m_);
      stopping_ = true;
    }
    has_job_.notify_all();
    notifier_.join();  // drains: queued notifications still fire
    CudaStream* prev = t_stream;
    t_stream = this;  // frees from the closures below go on this stream
    {
      DeviceGuard g(device_);
      cudaStreamSynchronize(stream_);
      for (auto& p : pending_) cudaEventDestroy(p.event);
      pending_.clear();
      for (cudaEvent_t e : free_events_) cudaEventDestroy(e);
      if (ready_point_) cudaEventDestroy(ready_point_);
      retired_.clear();
      staging_.reset();
      cudaFree(fault_dev_);
      cudaFreeHost(fault_host_);
      cudaStreamSynchronize(stream_);
      cudaStreamDestroy(stream_);
      cudaGetLastError();
    }
    t_stream = prev;
  }

  cudaStream_t handle() const { return stream_; }
  int device() const { return device_; }
  IndexFault* fault() const { return fault_dev_; }

  // Called from tasks only, so on the thread that enqueues: no lock. The buffer is per stream,
  // not per device, because each worker_thread has its own stream on a device and a shared buffer
  // would need ordering across them. A buffer that is outgrown is retired with the current task,
  // so it is freed once the work queued before it (which may still copy through it) is done.
  Staging staging(size_t want) {
    size_t need = kStagingMin;
    while (need < want && need < kStagingMax) need *= 2;
    if (staging_bytes_ < need) {
      if (staging_) need = kStagingMax;  // outgrown once: go to the cap, so at most one buffer is retired
      void* p = nullptr;
      if (cudaMallocHost(&p, need) != cudaSuccess) {
        cudaGetLastError();
        if (staging_) return {static_cast<char*>(staging_.get()), staging_bytes_};
        return {nullptr, 0};
      }
      if (staging_) retired_.push_back(std::move(staging_));
      staging_ = std::shared_ptr<void>(p, [](void* q) { cudaFreeHost(q); });
      staging_bytes_ = need;
    }
    return {static_cast<char*>(staging_.get()), staging_bytes_};
  }

  void enqueue(const char* op, std::function<void()> task, bool control = false) override {
    std::shared_ptr<OpOutputs> outputs = control ? nullptr : OpScope::current();
    std::optional<StreamError> under;  // the failure a control task runs under
    {
      std::lock_guard<std::mutex> lk(m_);
      if (failure_.active()) {
        // Failed: a task is dropped (its outputs marked) until the JS thread has been told.
        if (!control) {
          mark_failed(outputs.get(), failure_.mark());
          return;
        }
        under = failure_.mark();
      }
    }
    DeviceGuard g(device_);
    CudaStream* prev = t_stream;
    t_stream = this;
    std::optional<StreamError> err;
    // Profiling: a timing event pair around the task's launches, read back when the profiler drains.
    cudaEvent_t t0 = nullptr;
    int64_t enqueued_ns = 0;
    if (profiler::enabled()) {
      enqueued_ns = profiler::now_ns();
      if (cudaEventCreate(&t0) != cudaSuccess || cudaEventRecord(t0, stream_) != cudaSuccess) {
        cudaGetLastError();
        if (t0) cudaEventDestroy(t0);
        t0 = nullptr;
      }
    }
    try {
      ControlTaskScope scope(under ? &*under : nullptr);
      task();
    } catch (const Error& e) {
      err = StreamError{e.code, op_message(op, e.what())};
    } catch (const std::bad_alloc&) {
      err = StreamError{Code::OOM, std::string(op) + ": out of memory"};
    } catch (const std::exception& e) {
      err = StreamError{Code::Internal, op_message(op, e.what())};
    }
    last_op_ = op;
    if (t0) record_interval(op, enqueued_ns, t0);
    std::function<void(const StreamError&)> hook = take_task_failure_hook();
    std::optional<StreamError> mark;
    if (err) {
      std::lock_guard<std::mutex> lk(m_);
      mark = failure_.begin(op, *err);
      mark_failed(outputs.get(), *mark);
    }
    if (hook && mark) hook(*mark);
    retain(std::move(task));
    t_stream = prev;
  }

  void notify(std::function<void(std::optional<StreamError>)> done) override {
    DeviceGuard g(device_);
    Job job;
    job.done = std::move(done);
    job.op = last_op_;
    job.acked = failure_.acked();
    std::unique_lock<std::mutex> lk(m_);
    // A fault slot is read once its notification's event completes; bound the outstanding ones.
    has_slot_.wait(lk, [&] { return outstanding_ < kFaultSlots; });
    job.slot = next_slot_++ % kFaultSlots;
    ++outstanding_;
    cudaError_t e = cudaMemcpyAsync(fault_host_ + job.slot, fault_dev_, sizeof(IndexFault), cudaMemcpyDeviceToHost, stream_);
    if (e == cudaSuccess) e = cudaMemsetAsync(fault_dev_, 0, sizeof(IndexFault), stream_);
    if (e == cudaSuccess) e = cudaEventCreateWithFlags(&job.event, cudaEventBlockingSync | cudaEventDisableTiming);
    if (e == cudaSuccess) e = cudaEventRecord(job.event, stream_);
    if (e != cudaSuccess) {
      cudaGetLastError();
      job.launch_error = std::string("sync: ") + cudaGetErrorString(e);
    }
    jobs_.push_back(std::move(job));
    lk.unlock();
    has_job_.notify_one();
  }

  void acknowledge_failures() override { failure_.acknowledge_all(); }

  std::optional<StreamError> failure() override {
    std::lock_guard<std::mutex> lk(m_);
    return failure_.for_sync(failure_.acked());
  }

  // There is no host queue to measure here (enqueue only launches), so the watermark does not
  // apply: each call records a ready point, and is ready once the work queued up to the previous
  // point has finished. A loop that awaits ready once per step thus keeps the host at most about
  // one step ahead of the GPU, and the wait is an event on the notifier thread, not the JS thread.
  void when_ready(size_t, std::function<void()> ready) override {
    DeviceGuard g(device_);
    cudaEvent_t point = nullptr;
    if (cudaEventCreateWithFlags(&point, cudaEventBlockingSync | cudaEventDisableTiming) != cudaSuccess ||
        cudaEventRecord(point, stream_) != cudaSuccess) {
      cudaGetLastError();
      if (point) cudaEventDestroy(point);
      point = nullptr;  // no point to wait for next time; the bounded closure queue still holds
    }
    std::unique_lock<std::mutex> lk(m_);
    cudaEvent_t previous = std::exchange(ready_point_, point);
    if (!previous) {
      lk.unlock();
      ready();
      return;
    }
    Job job;
    job.ready = std::move(ready);
    job.event = previous;
    jobs_.push_back(std::move(job));
    lk.unlock();
    has_job_.notify_one();
  }

  // See note_gate_wait.
  void note_gate(GateWait w) { gate_ = std::move(w); }

  // See release_finished_work.
  void release_finished() {
    std::vector<std::function<void()>> done;
    {
      std::lock_guard<std::mutex> lk(m_);
      reap_locked(&done);
    }
    // Destroyed outside the lock: dropping storages calls the allocator.
  }

 private:
  // Maps event times to the profiler's clock: an event recorded once per profiling session and
  // waited for, with the host time at which the wait returned (accurate to the wait's latency).
  struct ClockBase {
    cudaEvent_t event = nullptr;
    int64_t host_ns = 0;
    ~ClockBase() {
      if (event) cudaEventDestroy(event);
    }
  };

  std::shared_ptr<ClockBase> clock_base() {
    if (base_ && base_generation_ == profiler::generation()) return base_;
    auto b = std::make_shared<ClockBase>();
    if (cudaEventCreate(&b->event) != cudaSuccess || cudaEventRecord(b->event, stream_) != cudaSuccess ||
        cudaEventSynchronize(b->event) != cudaSuccess) {
      cudaGetLastError();
      return nullptr;
    }
    b->host_ns = profiler::now_ns();
    base_ = b;
    base_generation_ = profiler::generation();
    return base_;
  }

  void record_interval(const char* op, int64_t enqueued_ns, cudaEvent_t t0) {
    cudaEvent_t t1 = nullptr;
    std::shared_ptr<ClockBase> base = clock_base();
    if (!base || cudaEventCreate(&t1) != cudaSuccess || cudaEventRecord(t1, stream_) != cudaSuccess) {
      cudaGetLastError();
      cudaEventDestroy(t0);
      if (t1) cudaEventDestroy(t1);
      return;
    }
    profiler::record_pending(
        {op, "cuda:" + std::to_string(device_), enqueued_ns, 0, 0}, [base, t0, t1](profiler::KernelRecord& r) {
          float ms0 = 0, ms1 = 0;
          bool ok = cudaEventSynchronize(t1) == cudaSuccess && cudaEventElapsedTime(&ms0, base->event, t0) == cudaSuccess &&
                    cudaEventElapsedTime(&ms1, base->event, t1) == cudaSuccess;
          if (!ok) cudaGetLastError();
          r.start_ns = base->host_ns + static_cast<int64_t>(double(ms0) * 1e6);
          r.end_ns = base->host_ns + static_cast<int64_t>(double(ms1) * 1e6);
          cudaEventDestroy(t0);
          cudaEventDestroy(t1);
          return ok;
        });
  }

  std::shared_ptr<ClockBase> base_;
  uint64_t base_generation_ = 0;

  static constexpr int kFaultSlots = 256;
  static constexpr size_t kCapacity = 1024;
  static constexpr size_t kStagingMin = size_t(1) << 20;
  static constexpr size_t kStagingMax = size_t(32) << 20;

  struct Pending {
    cudaEvent_t event;
    std::function<void()> task;
    GateWait gate;  // a gate wait the task queued (its work finishes only once the gate opens)
  };
  struct Job {
    std::function<void(std::optional<StreamError>)> done;
    std::function<void()> ready;  // set instead of `done` for a when_ready wait
    cudaEvent_t event = nullptr;
    int slot = 0;
    const char* op = "sync";
    std::string launch_error;
    uint64_t acked = 0;  // failures the JS thread had acknowledged when the sync point was queued
  };

  cudaEvent_t take_event() {
    if (!free_events_.empty()) {
      cudaEvent_t e = free_events_.back();
      free_events_.pop_back();
      return e;
    }
    cudaEvent_t e = nullptr;
    if (cudaEventCreateWithFlags(&e, cudaEventBlockingSync | cudaEventDisableTiming) != cudaSuccess) {
      cudaGetLastError();
      return nullptr;
    }
    return e;
  }

  // Keeps the closure until its work is done; blocks (waits for the oldest) when the queue is full.
  void retain(std::function<void()> task) {
    if (!retired_.empty()) task = [t = std::move(task), old = std::exchange(retired_, {})] {};
    std::vector<std::function<void()>> done;
    {
      std::lock_guard<std::mutex> lk(m_);
      cudaEvent_t e = take_event();
      if (!e || cudaEventRecord(e, stream_) != cudaSuccess) {
        cudaGetLastError();
        if (e) free_events_.push_back(e);
        cudaStreamSynchronize(stream_);  // no event: fall back to waiting
        cudaGetLastError();
        gate_ = {};
        done.push_back(std::move(task));
      } else {
        pending_.push_back({e, std::move(task), std::exchange(gate_, {})});
      }
      // A full queue waits for its oldest task, unless that task's work sits behind a gate that
      // is still shut: in a clique of one process the gate opens only when this thread posts the
      // collective on the other groups, so waiting here would hang it until the group's timeout.
      // The queue grows past its bound instead, until the gate opens.
      if (pending_.size() > kCapacity && !pending_.front().gate.shut()) {
        cudaEventSynchronize(pending_.front().event);
        cudaGetLastError();
      }
      reap_locked(&done);
    }
    // Destroyed outside the lock: dropping storages calls the allocator.
  }

  void reap_locked(std::vector<std::function<void()>>* out) {
    while (!pending_.empty()) {
      cudaError_t q = cudaEventQuery(pending_.front().event);
      if (q == cudaErrorNotReady) break;
      // Any other result (success or a device fault) means the work will not touch memory again.
      if (q != cudaSuccess) cudaGetLastError();
      free_events_.push_back(pending_.front().event);
      out->push_back(std::move(pending_.front().task));
      pending_.pop_front();
    }
  }

  void notifier_loop() {
    try_set_current_device(device_);
    t_stream = this;
    for (;;) {
      Job job;
      {
        std::unique_lock<std::mutex> lk(m_);
        has_job_.wait(lk, [&] { return stopping_ || !jobs_.empty(); });
        if (jobs_.empty()) return;
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      if (job.ready) {
        // Errors stay for the next sync point; a fault is sticky, so it will see it too.
        cudaEventSynchronize(job.event);
        cudaEventDestroy(job.event);
        cudaGetLastError();
        std::vector<std::function<void()>> finished;
        {
          std::lock_guard<std::mutex> lk(m_);
          reap_locked(&finished);
        }
        finished.clear();
        job.ready();
        continue;
      }
      std::optional<StreamError> async_err;
      if (!job.launch_error.empty()) {
        cudaStreamSynchronize(stream_);
        async_err = StreamError{Code::Cuda, job.launch_error};
      } else {
        cudaError_t e = cudaEventSynchronize(job.event);
        if (e == cudaSuccess) e = cudaGetLastError();
        if (e != cudaSuccess) async_err = StreamError{Code::Cuda, std::string(job.op) + ": " + cudaGetErrorString(e)};
      }
      if (job.event) cudaEventDestroy(job.event);
      cudaGetLastError();
      // A fault found here is found after the kernels queued behind it were launched: they have
      // run (a GPU has no way to drop them), but from now on the stream drops new work until the
      // JS thread has been told, as on the CPU.
      std::optional<StreamError> err;
      std::vector<std::function<void()>> finished;
      {
        std::lock_guard<std::mutex> lk(m_);
        const IndexFault f = fault_host_[job.slot];
        if (async_err) err = std::move(async_err);
        if (!err && f.flag && f.op == kOneHot) {
          err = StreamError{Code::Index, "oneHot: class index " + std::to_string(f.value) + " is out of range for numClasses " +
                                             std::to_string(f.limit)};
        } else if (!err && f.flag) {
          const char* name = f.op == kGather          ? "gather"
                             : f.op == kScatterAdd    ? "scatterAdd"
                             : f.op == kCrossEntropy  ? "crossEntropy"
                             : f.op == kScatter       ? "scatter"
                             : f.op == kScatterReduce ? "scatterReduce"
                             : f.op == kMaskedSelect  ? "maskedSelect"
                             : f.op == kNonzero       ? "nonzero"
                                                      : "indexSelect";
          err = StreamError{Code::Index, std::string(name) + ": index " + std::to_string(f.value) +
                                             " is out of range for a dimension of size " + std::to_string(f.limit)};
        }
        if (err) failure_.begin(job.op, *err);
        err = failure_.for_sync(job.acked);
        --outstanding_;
        reap_locked(&finished);
      }
      has_slot_.notify_all();
      finished.clear();
      job.done(std::move(err));
    }
  }

  int device_;
  cudaStream_t stream_ = nullptr;
  IndexFault* fault_dev_ = nullptr;
  IndexFault* fault_host_ = nullptr;
  const char* last_op_ = "sync";
  std::shared_ptr<void> staging_;  // pinned; see staging()
  size_t staging_bytes_ = 0;
  std::vector<std::shared_ptr<void>> retired_;
  GateWait gate_;  // noted by the running task, moved into its Pending by retain

  std::mutex m_;
  std::condition_variable has_job_, has_slot_;
  std::deque<Job> jobs_;
  std::deque<Pending> pending_;
  std::vector<cudaEvent_t> free_events_;
  StreamFailure failure_;              // m_ guards all but its lock-free reads
  cudaEvent_t ready_point_ = nullptr;  // see when_ready
  int outstanding_ = 0;
  unsigned next_slot_ = 0;
  bool stopping_ = false;
  std::thread notifier_;
};

std::unique_ptr<Stream> make_stream(int device_index) { return std::make_unique<CudaStream>(device_index); }

const bool registered = [] {
  register_stream_factory(DeviceType::CUDA, make_stream);
  return true;
}();

}  // namespace

cudaStream_t stream_for(int device) {
  if (t_stream && t_stream->device() == device) return t_stream->handle();
  try {
    Stream& s = Context::current().stream(Device{DeviceType::CUDA, device});
    if (auto* cs = dynamic_cast<CudaStream*>(&s)) return cs->handle();
  } catch (...) {
  }
  return nullptr;
}

void note_gate_wait(GateWait w) {
  if (t_stream) t_stream->note_gate(std::move(w));
}

void release_finished_work(int device) noexcept {
  try {
    CudaStream* s = t_stream && t_stream->device() == device ? t_stream : nullptr;
    if (!s) s = dynamic_cast<CudaStream*>(&Context::current().stream(Device{DeviceType::CUDA, device}));
    if (s) s->release_finished();
  } catch (...) {
    // no stream on this thread for that device: nothing of ours to release
  }
}

cudaStream_t current_stream() {
  if (!t_stream) fail(Code::Internal, "a CUDA kernel was launched outside a CUDA stream task");
  return t_stream->handle();
}

cudaStream_t context_stream(int device) {
  Stream& s = Context::current().stream(Device{DeviceType::CUDA, device});
  auto* cs = dynamic_cast<CudaStream*>(&s);
  if (!cs) fail(Code::Internal, "cuda:", device, " has no CUDA stream");
  return cs->handle();
}

Staging current_staging(size_t want) {
  if (!t_stream) fail(Code::Internal, "a host transfer was queued outside a CUDA stream task");
  return t_stream->staging(want);
}

IndexFault* current_index_fault() {
  if (!t_stream) fail(Code::Internal, "a CUDA kernel was launched outside a CUDA stream task");
  return t_stream->fault();
}

}  // namespace flock::cuda
