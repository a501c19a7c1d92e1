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
#include <optional>
#include <vector>
#include "device.h"
#include "tensor.h"

namespace flock {

class Event {
 public:
  // Marks the event reached and runs the callbacks added so far (on the calling thread). With
  // `failure`, the work it marks failed (stream_failure.h): a stream waiting on it fails too.
  void set(const StreamError* failure = nullptr);
  bool query();
  // The failure it was set with (none while unset).
  std::optional<StreamError> failure();
  // Blocks the calling (stream) thread until set; throws the failure it was set with, if any.
  void wait();
  // Calls `fn` once set: at once on the caller's thread when it already is.
  void on_set(std::function<void()> fn);

 private:
  std::mutex m_;
  std::condition_variable cv_;
  bool set_ = false;
  std::optional<StreamError> failure_;
  std::vector<std::function<void()>> callbacks_;
};

// Sets `e` when the task that holds it is destroyed: after it ran, or when its stream dropped it
// or it threw. Then `written`'s failure mark (set before a dropped or failed task's closure goes)
// travels with the event, so the waiting stream fails too instead of reading what was never written.
struct EventSetter {
  std::shared_ptr<Event> e;
  std::shared_ptr<Storage> written;
  ~EventSetter() { e->set(written ? written->failure() : nullptr); }
};

// A new event, set once everything queued on `d`'s stream before the call has run.
std::shared_ptr<Event> record_event(Device d, const char* op = "recordEvent");
// Work queued on `d`'s stream after this call runs only once `e` is set.
void wait_event(Device d, std::shared_ptr<Event> e, const char* op = "waitEvent");
// ERR_DEVICE naming `op` unless `d` is a CPU device.
void require_cpu_stream(Device d, const char* op);

}  // namespace flock
