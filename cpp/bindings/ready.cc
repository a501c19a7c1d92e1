// fl.ready(): the back-pressure point of async training loops. It resolves once the device streams
// let the host queue more, from a stream thread through the thread-safe function, so the JS thread
// waits in the event loop (timers, I/O and finalizers run) instead of parked on a full queue.
#include <mutex>
#include "addon.h"
#include "convert.h"

namespace flock::js {
namespace {

// Counts down the streams still to report ready; the last one settles the promise, on whichever
// thread it reports from. `settle` is installed only once the caller knows a promise is needed.
// A failed stream (stream_failure.h) rejects it with its error, as the other sync points do.
struct ReadyWait {
  std::mutex m;
  int left;
  Addon::Settle settle;
  std::vector<Stream*> streams;
  explicit ReadyWait(std::vector<Stream*> s) : left(static_cast<int>(s.size()) + 1), streams(std::move(s)) {}
  std::optional<StreamError> failure() const {
    for (Stream* s : streams)
      if (auto f = s->failure()) return f;
    return std::nullopt;
  }
  void count_down() {
    Addon::Settle s;
    {
      std::lock_guard<std::mutex> lk(m);
      if (--left > 0 || !settle) return;
      s = std::move(settle);
    }
    s(failure());
  }
};

Napi::Value Ready(const Napi::CallbackInfo& info) {
  Args a{info, "ready"};
  Napi::Env env = info.Env();
  Addon& addon = Addon::of(env);
  std::vector<Stream*> streams;
  if (info[0].IsNull() || info[0].IsUndefined())
    streams = addon.context.streams();
  else
    streams.push_back(&addon.context.stream(a.device(0)));
  const auto low = static_cast<size_t>(a.integer(1, "lowWatermark", 0, int64_t(1) << 30));

  // One count for this call itself, so a stream reporting at once cannot settle early.
  auto wait = std::make_shared<ReadyWait>(streams);
  for (Stream* s : streams) s->when_ready(low, [wait] { wait->count_down(); });
  {
    std::lock_guard<std::mutex> lk(wait->m);
    if (--wait->left == 0 && !wait->failure()) {
      // Already ready: no trip through the thread-safe function.
      auto deferred = Napi::Promise::Deferred::New(env);
      deferred.Resolve(env.Undefined());
      return deferred.Promise();
    }
  }
  return addon.promise_from(env, [wait](Addon::Settle settle) {
    {
      std::lock_guard<std::mutex> lk(wait->m);
      if (wait->left > 0) {
        wait->settle = std::move(settle);
        return;
      }
    }
    settle(wait->failure());  // failed, or the last stream reported between the check above and now
  });
}

// How many small tasks `device`'s stream has run on the JS thread instead of its own (enqueue_small).
Napi::Value StreamInlineTasks(const Napi::CallbackInfo& info) {
  Args a{info, "streamInlineTasks"};
  Stream& s = Addon::of(info.Env()).context.stream(a.device(0));
  return Napi::Number::New(info.Env(), static_cast<double>(s.inline_tasks()));
}

}  // namespace

}  // namespace flock::js

#include "../generated/register_ready.inc"
