// The CPU stream: one worker thread running queued kernels in order. The queue is bounded, so a
// loop that never awaits blocks briefly in enqueue instead of growing memory without limit; an
// async loop waits in when_ready (a callback, not a parked thread) until the worker drains.
// A small task (enqueue_small) queued while the worker is parked with nothing queued runs at once on
// the calling thread instead: waking the worker costs more than the kernel (a futex syscall and a
// context switch), and nothing is ahead of it to wait for. Whether it may is one atomic, the gate:
// taking and handing it back are a compare-exchange each, no lock, on every small op.
#pragma once
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>
#include "../device.h"
#include "../stream_failure.h"

namespace flock::cpu {

class CpuStream final : public Stream {
 public:
  // The stream of virtual CPU device `device` (its worker runs kernels on that device's pool).
  explicit CpuStream(int device = 0, size_t capacity = 1024);
  ~CpuStream() override;
  void enqueue(const char* op, std::function<void()> task, bool control = false) override;
  bool run_inline(const char* op, const std::function<void()>& task) override;
  void notify(std::function<void(std::optional<StreamError>)> done) override;
  void when_ready(size_t low_watermark, std::function<void()> ready) override;
  std::optional<StreamError> failure() override;
  void acknowledge_failures() override { failure_.acknowledge_all(); }
  uint64_t inline_tasks() override;
  size_t depth();

 private:
  struct Task {
    const char* op;
    std::function<void()> fn;
    int64_t enqueued_ns = 0;             // nonzero only when queued while profiling
    std::shared_ptr<OpOutputs> outputs;  // what the op call that queued it made
    bool control = false;
    bool inline_run = false;  // run by run_inline, on the thread of the op call (outputs: OpScope::current())
  };
  struct Waiter {
    size_t low_watermark;
    std::function<void()> ready;
  };
  void loop();
  // Runs one task; when it throws, begins (or joins) the stream's failure, marks the task's
  // outputs and drops what is queued. A control task runs under the current failure, if any.
  void run(Task& task);
  // Moves the queued tasks that are not control tasks into `dropped`, marking their outputs with
  // the failure's mark; called with m_ held.
  void drop_queued_locked(std::vector<Task>& dropped);
  // Moves out the waiters whose watermark the queue is at or below; called with m_ held.
  std::vector<std::function<void()>> take_ready_locked();

  std::mutex m_;
  std::condition_variable has_work_, has_space_;
  std::deque<Task> queue_;
  std::vector<Waiter> waiters_;
  size_t capacity_;
  int device_;
  std::string name_;  // "cpu", "cpu:1": the stream's name in profiles
  bool stopping_ = false;
  bool worker_idle_ = false;  // only then does enqueue need to wake the worker
  bool count_fixed_ = false;  // an inline task has fixed the CPU device count (touched only by the gate's holder)
  // The inline gate. kOpen: the worker is parked with nothing queued and not stopping, so a caller
  // may take the gate (kInline) and run a task itself; the worker starts nothing while a caller holds
  // it. A task queued meanwhile marks it kInlinePending, and the holder then wakes the worker.
  // The worker opens it (with m_ held) before it parks on an empty queue; enqueue closes it.
  enum Gate : int { kClosed, kOpen, kInline, kInlinePending };
  std::atomic<int> gate_{kClosed};
  std::atomic<uint64_t> inline_tasks_{0};  // run by enqueue_small on the calling thread
  int producers_waiting_ = 0;              // only then does the worker need to signal free space
  StreamFailure failure_;                  // m_ guards all but its lock-free reads
  std::thread worker_;
};

}  // namespace flock::cpu
