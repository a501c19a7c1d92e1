#include "stream_failure.h"
#include <utility>
#include "tensor.h"

namespace flock {
namespace {

// One thread's state. Every op call touches it several times, so it is reached through one plain
// thread_local pointer: a thread_local with a destructor (a shared_ptr, a std::function) is read
// through a guarded wrapper call on every access, which cost a small op measurably.
struct ThreadState {
  int depth = 0;                       // open OpScopes
  std::shared_ptr<OpOutputs> outputs;  // the current (or last) call's storages
  const StreamError* task_failure = nullptr;
  std::function<void(const StreamError&)> hook;
};

thread_local ThreadState* t_state = nullptr;

// Made on the thread's first use; freed when the thread ends.
ThreadState& state() {
  if (ThreadState* s = t_state) return *s;
  struct Owner {
    ~Owner() {
      delete t_state;
      t_state = nullptr;
    }
  };
  thread_local Owner owner;
  return *(t_state = new ThreadState);
}

}  // namespace

// The list of the last call is reused when no task holds it any more (its kernels ran inline, or
// it made no storage): a small op then costs no allocation for it.
OpScope::OpScope() {
  ThreadState& t = state();
  outer_ = t.depth++ == 0;
  if (!outer_ || !t.outputs) return;
  if (t.outputs.use_count() == 1)
    t.outputs->storages.clear();
  else
    t.outputs.reset();
}

OpScope::~OpScope() { --state().depth; }

void OpScope::record(const std::shared_ptr<Storage>& s) {
  ThreadState& t = state();
  if (t.depth == 0) return;  // a temporary made inside a running task: its task owns it
  if (!t.outputs) t.outputs = std::make_shared<OpOutputs>();
  t.outputs->storages.push_back(s);
}

std::shared_ptr<OpOutputs> OpScope::current() {
  const ThreadState& t = state();
  return t.depth > 0 && t.outputs && !t.outputs->storages.empty() ? t.outputs : nullptr;
}

void mark_failed(const OpOutputs* outs, const StreamError& e) {
  if (!outs) return;
  for (const auto& w : outs->storages)
    if (auto s = w.lock()) s->mark_failed(e);
}

const StreamError* current_task_failure() { return state().task_failure; }

void on_task_failure(std::function<void(const StreamError& mark)> fn) { state().hook = std::move(fn); }

std::function<void(const StreamError& mark)> take_task_failure_hook() { return std::exchange(state().hook, nullptr); }

ControlTaskScope::ControlTaskScope(const StreamError* failure) : previous(state().task_failure) {
  state().task_failure = failure;
}
ControlTaskScope::~ControlTaskScope() { state().task_failure = previous; }

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
