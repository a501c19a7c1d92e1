// Fail-stop: a task that fails stops its stream. The tasks queued after it are dropped, not run,
// and every storage they (and the failed task) would have written is marked failed, until the JS
// thread has been told: a sync point rejects with the error, and its delivery on the JS thread
// acknowledges it, after which the stream runs new work again. An op that reads a failed storage
// throws at once (bindings check every tensor argument), so an error never leaves a half-applied
// result behind: a training step whose loss failed never reaches its optimizer update.
//
// Control tasks (sync points, events, collectives) are never dropped: they keep the streams and
// the ranks in step, and learn of the failure through current_task_failure().
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>
#include "device.h"

namespace flock {

struct Storage;

// The storages one op call makes (outputs and temporaries), shared by every task it queues.
struct OpOutputs {
  std::vector<std::weak_ptr<Storage>> storages;
};

// Open while a binding runs (convert.h's `guarded`): the storages made on this thread meanwhile
// are recorded for the tasks queued by the same call. A nested scope joins the outer one.
class OpScope {
 public:
  OpScope();
  ~OpScope();
  OpScope(const OpScope&) = delete;
  OpScope& operator=(const OpScope&) = delete;
  // Called by empty() for every new storage.
  static void record(const std::shared_ptr<Storage>& s);
  // The current call's storages, for a task it queues, or for one it ran inline that failed
  // (null when it has made none yet, or no scope is open).
  static std::shared_ptr<OpOutputs> current();

 private:
  bool outer_ = false;
};

// Marks every live storage of `outs` failed with `e` (the first mark of a storage wins).
void mark_failed(const OpOutputs* outs, const StreamError& e);

// The failure a control task runs under: set by the stream around a control task while its
// stream is failed, so a collective can tell its peers (null otherwise).
const StreamError* current_task_failure();

// The sticky failure state of one stream. Not locked itself: the stream calls it under its own
// lock, except active() and acked(), which are lock-free reads.
class StreamFailure {
 public:
  StreamFailure();
  // A task named `op` failed with `e`: begins a failure unless one is already active (the first
  // error is the one reported). Returns the mark for the storages that failed or were dropped.
  const StreamError& begin(const char* op, const StreamError& e);
  // A failure has begun and has not been acknowledged: tasks are dropped.
  bool active() const { return last_id_.load(std::memory_order_acquire) > acked_->load(std::memory_order_acquire); }
  // What storages of a dropped task are marked with (valid while active()); its acknowledge
  // acknowledges this failure, for an op that throws it to the JS thread.
  const StreamError& mark() const { return mark_; }
  // Taken when a sync point is queued: the failures acknowledged by then.
  uint64_t acked() const { return acked_->load(std::memory_order_acquire); }
  // What a sync point queued when acked() was `acked_then` reports once it runs: the latest
  // failure, unless the JS thread had already acknowledged it when it queued the sync point.
  // The error carries its acknowledgement.
  std::optional<StreamError> for_sync(uint64_t acked_then) const;
  // Every failure begun so far is acknowledged.
  void acknowledge_all() const { acknowledgement(last_id_.load(std::memory_order_acquire))->acknowledge(); }

 private:
  std::shared_ptr<const FailureAck> acknowledgement(uint64_t id) const;
  std::shared_ptr<std::atomic<uint64_t>> acked_;  // shared with the errors handed out, which may outlive the stream
  std::atomic<uint64_t> last_id_{0};
  StreamError error_;  // the latest failure's error, as sync points report it
  StreamError mark_;   // "<op> failed earlier: <code> <message>", for its storages
};

// For a task about to throw: `fn` is called with the mark of the failure its throw begins (or
// joins), once the stream has begun it. A collective whose failure fails its stream settles its
// Work from here, so the Work's rejection acknowledges that failure too.
void on_task_failure(std::function<void(const StreamError& mark)> fn);
// The streams call it after a task threw: the hook the task set, if any (cleared).
std::function<void(const StreamError& mark)> take_task_failure_hook();

// Runs a control task: with current_task_failure() set to `failure` (may be null) meanwhile.
struct ControlTaskScope {
  explicit ControlTaskScope(const StreamError* failure);
  ~ControlTaskScope();
  const StreamError* previous;
};

}  // namespace flock
