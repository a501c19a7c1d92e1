#include "stream_failure.h"
#include <utility>
#include "tensor.h"

namespace flock {
namespace {

thread_local int t_scope_depth = 0;
thread_local std::shared_ptr<OpOutputs> t_outputs;
thread_local const StreamError* t_task_failure = nullptr;
thread_local std::function<void(const StreamError&)> t_failure_hook;

}  // namespace

// The list of the last call is reused when no task holds it any more (its kernels ran inline, or
// it made no storage): a small op then costs no allocation for it.
OpScope::OpScope() : outer_(t_scope_depth++ == 0) {
  if (!outer_ || !t_outputs) return;
  if (t_outputs.use_count() == 1) t_outputs->storages.clear();
  else t_outputs.reset();
}

OpScope::~OpScope() { --t_scope_depth; }

void OpScope::record(const std::shared_ptr<Storage>& s) {
  if (t_scope_depth == 0) return;  // a temporary made inside a running task: its task owns it
  if (!t_outputs) t_outputs = std::make_shared<OpOutputs>();
  t_outputs->storages.push_back(s);
}

std::shared_ptr<OpOutputs> OpScope::current() {
  return t_scope_depth > 0 && t_outputs && !t_outputs->storages.empty() ? t_outputs : nullptr;
}

void mark_failed(const OpOutputs* outs, const StreamError& e) {
  if (!outs) return;
  for (const auto& w : outs->storages)
    if (auto s = w.lock()) s->mark_failed(e);
}

const StreamError* current_task_failure() { return t_task_failure; }

void on_task_failure(std::function<void(const StreamError& mark)> fn) { t_failure_hook = std::move(fn); }

std::function<void(const StreamError& mark)> take_task_failure_hook() { return std::exchange(t_failure_hook, nullptr); }

ControlTaskScope::ControlTaskScope(const StreamError* failure) : previous(t_task_failure) { t_task_failure = failure; }
ControlTaskScope::~ControlTaskScope() { t_task_failure = previous; }

StreamFailure::StreamFailure() : acked_(std::make_shared<std::atomic<uint64_t>>(0)) {}

// Acknowledged on the JS thread once the error has reached it (a rejected sync point, or an op
// that read a failed tensor): from then on the stream runs what the JS thread queues, which cannot
// read a failed storage without throwing.
std::shared_ptr<const FailureAck> StreamFailure::acknowledgement(uint64_t id) const {
  return std::make_shared<FailureAck>(FailureAck{acked_, id});
}

const StreamError& StreamFailure::begin(const char* op, const StreamError& e) {
  if (active()) return mark_;
  const uint64_t id = last_id_.load(std::memory_order_acquire) + 1;
  error_ = StreamError{e.code, e.message};
  mark_ = StreamError{e.code, std::string(op) + " failed earlier: " + code_name(e.code) + " " + e.message, acknowledgement(id)};
  last_id_.store(id, std::memory_order_release);
  return mark_;
}

std::optional<StreamError> StreamFailure::for_sync(uint64_t acked_then) const {
  const uint64_t id = last_id_.load(std::memory_order_acquire);
  if (id <= acked_then) return std::nullopt;
  return StreamError{error_.code, error_.message, acknowledgement(id)};
}

}  // namespace flock
