#include "event.h"
#include "context.h"
#include "stream_failure.h"

namespace flock {

void Event::set(const StreamError* failure) {
  std::vector<std::function<void()>> callbacks;
  {
    std::lock_guard<std::mutex> lk(m_);
    if (set_) return;
    set_ = true;
    if (failure) failure_ = StreamError{failure->code, failure->message};
    callbacks.swap(callbacks_);
  }
  cv_.notify_all();
  for (auto& fn : callbacks) fn();
}

bool Event::query() {
  std::lock_guard<std::mutex> lk(m_);
  return set_;
}

std::optional<StreamError> Event::failure() {
  std::lock_guard<std::mutex> lk(m_);
  return failure_;
}

void Event::wait() {
  std::unique_lock<std::mutex> lk(m_);
  cv_.wait(lk, [&] { return set_; });
  if (failure_) throw Error(failure_->code, failure_->message);
}

void Event::on_set(std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> lk(m_);
    if (!set_) {
      callbacks_.push_back(std::move(fn));
      return;
    }
  }
  fn();
}

void require_cpu_stream(Device d, const char* op) {
  if (!d.is_cpu())
    fail(Code::Device, op, ": events order the streams of CPU devices; ", d.str(),
         " orders its work through its own stream (tensor.to() and collectives already wait for it)");
}

std::shared_ptr<Event> record_event(Device d, const char* op) {
  require_cpu_stream(d, op);
  auto e = std::make_shared<Event>();
  // A control task: it runs on a failed stream too, and hands the failure on.
  Context::current().stream(d).enqueue(
      op, [e] { e->set(current_task_failure()); }, true);
  return e;
}

void wait_event(Device d, std::shared_ptr<Event> e, const char* op) {
  require_cpu_stream(d, op);
  if (e->query() && !e->failure()) return;
  Context::current().stream(d).enqueue(
      op, [e] { e->wait(); }, true);
}

}  // namespace flock
