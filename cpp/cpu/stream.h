// The CPU stream: one worker thread running queued kernels in order. The queue is bounded, so a
// loop that never awaits blocks briefly in enqueue instead of growing memory without limit.
#pragma once
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include "../device.h"

namespace flock::cpu {

class CpuStream final : public Stream {
 public:
  explicit CpuStream(size_t capacity = 1024);
  ~CpuStream() override;
  void enqueue(const char* op, std::function<void()> task) override;
  void notify(std::function<void(std::optional<StreamError>)> done) override;
  size_t depth();

 private:
  struct Task {
    const char* op;
    std::function<void()> fn;
  };
  void loop();

  std::mutex m_;
  std::condition_variable has_work_, has_space_;
  std::deque<Task> queue_;
  size_t capacity_;
  bool stopping_ = false;
  bool worker_idle_ = false;    // only then does enqueue need to wake the worker
  int producers_waiting_ = 0;   // only then does the worker need to signal free space
  std::optional<StreamError> error_;
  std::thread worker_;
};

}  // namespace flock::cpu
