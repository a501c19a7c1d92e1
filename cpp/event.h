// Events order work across device streams without the host waiting: record() marks the point a
// stream has reached, wait() makes work queued on another stream from now on run only after that
// point. Both return at once. Waits only ever point at work queued earlier, so streams waiting on
// each other cannot deadlock. CPU device streams only: a CUDA stream's tasks run on the host
// thread that queues them and would block it.
#pragma once
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>
#include "device.h"

namespace flock {

class Event {
 public:
  // Marks the event reached and runs the callbacks added so far (on the calling thread).
  void set();
  bool query();
  // Blocks the calling (stream) thread until set.
  void wait();
  // Calls `fn` once set: at once on the caller's thread when it already is.
  void on_set(std::function<void()> fn);

 private:
  std::mutex m_;
  std::condition_variable cv_;
  bool set_ = false;
  std::vector<std::function<void()>> callbacks_;
};

// Sets `e` when it goes out of scope, so a task that throws still releases its waiters.
struct EventSetter {
  std::shared_ptr<Event> e;
  ~EventSetter() { e->set(); }
};

// A new event, set once everything queued on `d`'s stream before the call has run.
std::shared_ptr<Event> record_event(Device d, const char* op = "recordEvent");
// Work queued on `d`'s stream after this call runs only once `e` is set.
void wait_event(Device d, std::shared_ptr<Event> e, const char* op = "waitEvent");
// ERR_DEVICE naming `op` unless `d` is a CPU device.
void require_cpu_stream(Device d, const char* op);

}  // namespace flock
