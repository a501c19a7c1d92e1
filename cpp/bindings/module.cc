// Addon entry point: one instance per Node.js environment (main thread or worker_thread).
#include "addon.h"
#include "convert.h"
#include "../generated/exports.h"

namespace flock::js {

void resolve_completion(Napi::Env env, Napi::Function, std::nullptr_t*, Completion* c) {
  std::unique_ptr<Completion> done(c);
  if (!env) return;  // the environment is shutting down
  if (c->error) {
    // Delivered: the stream that failed runs new work again (stream_failure.h).
    c->error->acknowledge();
    c->deferred.Reject(make_js_error(env, c->error->code, c->error->message).Value());
  } else if (c->bytes) {
    Napi::ArrayBuffer buf = Napi::ArrayBuffer::New(env, c->bytes->size());
    if (!c->bytes->empty()) std::memcpy(buf.Data(), c->bytes->data(), c->bytes->size());
    c->deferred.Resolve(buf);
  } else {
    c->deferred.Resolve(env.Undefined());
  }
  Addon::of(env).finish(env);
}

void Addon::account_external(Napi::Env env, int64_t delta) {
  external_live_ += delta;
  const int64_t change = external_live_ - external_reported_;
  if (change < kExternalGrain && change > -kExternalGrain) return;
  int64_t ignored;
  napi_adjust_external_memory(env, change, &ignored);
  external_reported_ = external_live_;
}

Addon::Addon(Napi::Env env, Napi::Object exports) {
  Context::set_current(&context);
  sync_fn_ = SyncFunction::New(env, "flockml.sync", 0, 1);
  sync_fn_.Unref(env);  // only pending promises keep the process alive
  Napi::Float64Array ret = Napi::Float64Array::New(env, 2);
  returned = ret.Data();
  returned_ref = Napi::Persistent(ret);
  exports.Set("returned", ret);
  exports.Set("metas", meta.metas(env));
  register_exports(env, exports);  // every export declared in types/decl/ (generated)
}

Addon::~Addon() {
  try {
    context.synchronize_all();
  } catch (...) {
    // the environment is going away; errors nobody can await are dropped
  }
  sync_fn_.Release();
  Context::set_current(nullptr);
}

Napi::Value Addon::wrap(Napi::Env env, Tensor t) {
  const uint32_t m = meta.index_of(env, t);
  const int64_t bytes = static_cast<int64_t>(t.nbytes());
  const double h = handles.add(std::move(t));
  account_external(env, bytes);
  returned[0] = m;
  returned[1] = h;
  return Napi::Number::New(env, h);
}

bool Addon::dispose(Napi::Env env, double handle) {
  const int64_t bytes = handles.release(handle);
  if (bytes < 0) return false;
  account_external(env, -bytes);
  return true;
}

Napi::Promise Addon::when_done(Napi::Env env, Device device, std::shared_ptr<std::vector<uint8_t>> bytes) {
  Stream& stream = context.stream(device);
  return promise_from(
      env, [&stream](Settle settle) { stream.notify(std::move(settle)); }, std::move(bytes));
}

Napi::Promise Addon::promise_from(Napi::Env env, const std::function<void(Settle)>& start,
                                  std::shared_ptr<std::vector<uint8_t>> bytes) {
  auto deferred = Napi::Promise::Deferred::New(env);
  Napi::Promise promise = deferred.Promise();
  auto* c = new Completion{deferred, std::move(bytes), std::nullopt};
  if (pending_++ == 0) sync_fn_.Ref(env);
  SyncFunction fn = sync_fn_;
  try {
    start([fn, c](std::optional<StreamError> err) mutable {
      c->error = std::move(err);
      if (fn.NonBlockingCall(c) != napi_ok) delete c;
    });
  } catch (...) {
    delete c;
    finish(env);
    throw;
  }
  return promise;
}

void Addon::finish(Napi::Env env) {
  if (--pending_ == 0) sync_fn_.Unref(env);
}

}  // namespace flock::js

using FlockAddon = flock::js::Addon;
NODE_API_ADDON(FlockAddon)
