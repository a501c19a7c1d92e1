// The per-environment addon instance: its Context (streams), the thread-safe function that
// resolves sync-point promises from stream threads, and the table of JS tensor handles.
#pragma once
#include <napi.h>
#include <array>
#include <chrono>
#include <cstring>
#include <memory>
#include <vector>
#include <functional>
#include <optional>
#include "../context.h"
#include "../tensor.h"
#include "tensor_handle.h"

namespace flock::js {

// A promise waiting on a stream: resolved on the JS thread by the thread-safe function.
struct Completion {
  Napi::Promise::Deferred deferred;
  std::shared_ptr<std::vector<uint8_t>> bytes;  // the data read, for data(); null for sync()
  std::optional<StreamError> error;
};

void resolve_completion(Napi::Env env, Napi::Function, std::nullptr_t*, Completion* c);
using SyncFunction = Napi::TypedThreadSafeFunction<std::nullptr_t, Completion, resolve_completion>;

class Addon : public Napi::Addon<Addon> {
 public:
  Addon(Napi::Env env, Napi::Object exports);
  ~Addon();
  static Addon& of(Napi::Env env) { return *env.GetInstanceData<Addon>(); }

  // A new JS handle for `t` (a number; see tensor_handle.h), its metadata index and the handle
  // written to `returned` for lib/tensor.ts.
  Napi::Value wrap(Napi::Env env, Tensor t);
  // Releases `handle`; false when it named no live tensor.
  bool dispose(Napi::Env env, double handle);
  // Returns a promise resolved once `device`'s stream has run everything queued so far, with the
  // bytes of `bytes` when given.
  Napi::Promise when_done(Napi::Env env, Device device, std::shared_ptr<std::vector<uint8_t>> bytes);
  void finish(Napi::Env env);
  // Returns a promise settled on the JS thread when the callback handed to `start` is called,
  // from any thread, with an error or none. Collectives resolve their Work through this.
  using Settle = std::function<void(std::optional<StreamError>)>;
  Napi::Promise promise_from(Napi::Env env, const std::function<void(Settle)>& start,
                             std::shared_ptr<std::vector<uint8_t>> bytes = nullptr);

  // Tells V8 how much native memory live handles hold, so the collector runs (and finalizers free
  // undisposed tensors) when it grows. Reported in steps of kExternalGrain: a step's activations,
  // created and disposed within a tidy, add and remove the same bytes, and reporting each change
  // made V8 run a full mark-compact every ~40 steps of the README loop (16 per epoch, pauses of up
  // to 10 ms, p99 request latency 15-22 ms; batched: 1 per epoch, p99 ~6 ms).
  void account_external(Napi::Env env, int64_t delta);
  static constexpr int64_t kExternalGrain = int64_t(16) << 20;

  Context context;
  HandleTable handles;
  MetaCache meta;              // the metadata of new handles
  double* returned = nullptr;  // [metadata index, handle] of the latest wrap(); see tensor_handle.h
  Napi::Reference<Napi::Float64Array> returned_ref;
  // lib/errors.ts's classes, indexed by ErrorKind; set once by setErrorClasses.
  std::array<Napi::FunctionReference, 3> error_classes;

 private:
  SyncFunction sync_fn_;
  int64_t external_live_ = 0;      // bytes held by live handles
  int64_t external_reported_ = 0;  // what V8 has been told
  int pending_ = 0;
};

int live_slot(Device d);

// Milliseconds since the Unix epoch: the clock all processes on a machine share.
inline double epoch_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Wraps `settle` so it first writes the current epoch_ms() into `stamp` (8 bytes); a promise made
// with promise_from(..., stamp) then resolves with that time in an ArrayBuffer.
inline Addon::Settle stamped(Addon::Settle settle, std::shared_ptr<std::vector<uint8_t>> stamp) {
  return [settle = std::move(settle), stamp = std::move(stamp)](std::optional<StreamError> err) {
    const double ms = epoch_ms();
    std::memcpy(stamp->data(), &ms, sizeof ms);
    settle(std::move(err));
  };
}

}  // namespace flock::js
