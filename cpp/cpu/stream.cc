#include "stream.h"
#include <new>
#include "../profiler.h"
#include "threadpool.h"

namespace flock::cpu {

CpuStream::CpuStream(int device, size_t capacity)
    : capacity_(capacity), device_(device), name_(Device{DeviceType::CPU, device}.str()) {
  worker_ = std::thread([this] {
    set_thread_device(device_);
    loop();
  });
}

CpuStream::~CpuStream() {
  {
    std::lock_guard<std::mutex> lk(m_);
    stopping_ = true;
    int open = kOpen;
    gate_.compare_exchange_strong(open, kClosed, std::memory_order_acq_rel);
  }
  has_work_.notify_all();
  has_space_.notify_all();
  worker_.join();  // drains the queue first: queued notifications still fire
}

void CpuStream::enqueue(const char* op, std::function<void()> task, bool control) {
  std::shared_ptr<OpOutputs> outputs = control ? nullptr : OpScope::current();
  std::unique_lock<std::mutex> lk(m_);
  if (queue_.size() >= capacity_ && !stopping_) {
    ++producers_waiting_;
    has_space_.wait(lk, [&] { return queue_.size() < capacity_ || stopping_; });
    --producers_waiting_;
  }
  if (stopping_) fail(Code::Internal, op, ": the CPU stream is shutting down");
  if (!control && failure_.active()) {
    mark_failed(outputs.get(), failure_.mark());
    lk.unlock();
    task = nullptr;  // its storages are released outside the lock
    return;
  }
  queue_.push_back({op, std::move(task), profiler::enabled() ? profiler::now_ns() : 0, std::move(outputs), control});
  // No inline run may start past this task now; one running already wakes the worker when it ends.
  for (int g = gate_.load(std::memory_order_acquire);;) {
    if (g == kOpen && gate_.compare_exchange_weak(g, kClosed, std::memory_order_acq_rel)) break;
    if (g == kInline && gate_.compare_exchange_weak(g, kInlinePending, std::memory_order_acq_rel)) break;
    if (g == kClosed || g == kInlinePending) break;
  }
  const bool wake = worker_idle_;
  lk.unlock();
  if (wake) has_work_.notify_one();
}

bool CpuStream::run_inline(const char* op, const std::function<void()>& task) {
  // Open only while the worker is parked with nothing queued: everything queued before has run, and
  // the worker starts nothing others queue meanwhile until the gate is handed back, so stream order holds.
  int open = kOpen;
  if (!gate_.compare_exchange_strong(open, kInline, std::memory_order_acq_rel)) return false;
  // A failed stream drops the task: enqueue does that, with its marks.
  const bool ran = !failure_.active();
  if (ran) {
    // A kernel on the worker fixes the CPU device count when it first asks its pool for threads; one
    // run here touches no pool, so it fixes the count itself (setCpuDeviceCount then refuses a change).
    if (!count_fixed_) {
      try {
        cpu_device_count();
      } catch (const Error&) {
        // a bad FLOCKML_CPU_DEVICES is reported where devices are named (as threadpool.cc does)
      }
      count_fixed_ = true;
    }
    // Its outputs are looked up only if it fails (run()): no reference is taken for a task that runs.
    Task t{op, task, profiler::enabled() ? profiler::now_ns() : 0, nullptr, false, true};
    {
      SerialScope serial;  // microseconds of work: never wait for an intra-op pool another stream holds
      run(t);              // a failure is recorded before the gate opens, so the next sync point reports it
    }
    // Only the gate's holder writes the count: a plain store, not a locked add.
    inline_tasks_.store(inline_tasks_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
  int held = kInline;
  if (gate_.compare_exchange_strong(held, kOpen, std::memory_order_acq_rel)) return ran;
  // Work was queued while this ran (kInlinePending): the worker waits for it.
  {
    std::lock_guard<std::mutex> lk(m_);
    gate_.store(kClosed, std::memory_order_release);
  }
  has_work_.notify_one();
  return ran;
}

void CpuStream::notify(std::function<void(std::optional<StreamError>)> done) {
  const uint64_t acked = failure_.acked();
  enqueue(
      "sync",
      [this, acked, done = std::move(done)] {
        std::optional<StreamError> err;
        {
          std::lock_guard<std::mutex> lk(m_);
          err = failure_.for_sync(acked);
        }
        done(std::move(err));
      },
      true);
}

std::optional<StreamError> CpuStream::failure() {
  std::lock_guard<std::mutex> lk(m_);
  return failure_.for_sync(failure_.acked());
}

void CpuStream::when_ready(size_t low_watermark, std::function<void()> ready) {
  {
    std::lock_guard<std::mutex> lk(m_);
    if (queue_.size() > low_watermark) {
      waiters_.push_back({low_watermark, std::move(ready)});
      return;
    }
  }
  ready();
}

std::vector<std::function<void()>> CpuStream::take_ready_locked() {
  std::vector<std::function<void()>> out;
  for (size_t i = 0; i < waiters_.size();) {
    if (queue_.size() <= waiters_[i].low_watermark) {
      out.push_back(std::move(waiters_[i].ready));
      waiters_[i] = std::move(waiters_.back());
      waiters_.pop_back();
    } else {
      ++i;
    }
  }
  return out;
}

uint64_t CpuStream::inline_tasks() { return inline_tasks_.load(std::memory_order_relaxed); }

size_t CpuStream::depth() {
  std::lock_guard<std::mutex> lk(m_);
  return queue_.size();
}

void CpuStream::drop_queued_locked(std::vector<Task>& dropped) {
  std::deque<Task> kept;
  for (Task& t : queue_) {
    if (t.control) {
      kept.push_back(std::move(t));
    } else {
      mark_failed(t.outputs.get(), failure_.mark());
      dropped.push_back(std::move(t));
    }
  }
  queue_.swap(kept);
  if (producers_waiting_ > 0) has_space_.notify_all();
}

void CpuStream::run(Task& task) {
  std::optional<StreamError> err;
  const int64_t start_ns = task.enqueued_ns != 0 ? profiler::now_ns() : 0;
  std::optional<StreamError> under;  // the failure a control task runs under
  if (task.control && failure_.active()) {
    std::lock_guard<std::mutex> lk(m_);
    if (failure_.active()) under = failure_.mark();
  }
  try {
    if (task.control) {
      ControlTaskScope scope(under ? &*under : nullptr);
      task.fn();
    } else {
      task.fn();
    }
  } catch (const Error& e) {
    err = StreamError{e.code, op_message(task.op, e.what())};
  } catch (const std::bad_alloc&) {
    err = StreamError{Code::OOM, std::string(task.op) + ": out of memory"};
  } catch (const std::exception& e) {
    err = StreamError{Code::Internal, op_message(task.op, e.what())};
  }
  if (start_ns != 0) profiler::record({task.op, name_, task.enqueued_ns, start_ns, profiler::now_ns()});
  std::vector<Task> dropped;
  std::vector<std::function<void()>> ready;
  std::function<void(const StreamError&)> hook;
  std::optional<StreamError> mark;
  if (err) {
    hook = take_task_failure_hook();
    std::lock_guard<std::mutex> lk(m_);
    mark = failure_.begin(task.op, *err);
    mark_failed(task.inline_run ? OpScope::current().get() : task.outputs.get(), *mark);
    drop_queued_locked(dropped);
    if (!waiters_.empty()) ready = take_ready_locked();
  }
  if (hook && mark) hook(*mark);
  // Drop captured storages now, not when the next task arrives; marks are set before any closure
  // goes, so a guard in one (peer_copy.cc) sees them.
  task.fn = nullptr;
  task.outputs.reset();
  dropped.clear();
  for (auto& r : ready) r();
}

void CpuStream::loop() {
  for (;;) {
    Task task;
    std::vector<std::function<void()>> ready;
    bool drop = false;
    {
      std::unique_lock<std::mutex> lk(m_);
      worker_idle_ = true;
      if (queue_.empty() && !stopping_) gate_.store(kOpen, std::memory_order_release);
      has_work_.wait(lk, [&] {
        const int g = gate_.load(std::memory_order_acquire);
        return g != kInline && g != kInlinePending && (stopping_ || !queue_.empty());
      });
      worker_idle_ = false;
      if (queue_.empty()) return;  // stopping and drained
      task = std::move(queue_.front());
      queue_.pop_front();
      if (producers_waiting_ > 0) has_space_.notify_one();
      if (!waiters_.empty()) ready = take_ready_locked();
      // Queued before a failure an inline run began (drop_queued_locked took the rest).
      drop = !task.control && failure_.active();
      if (drop) mark_failed(task.outputs.get(), failure_.mark());
    }
    // Before the task, so the host refills the queue while the worker is still busy.
    for (auto& r : ready) r();
    if (!drop) run(task);
  }
}

}  // namespace flock::cpu
