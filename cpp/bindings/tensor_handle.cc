#include "tensor_handle.h"
#include "addon.h"
#include "convert.h"

namespace flock::js {

int live_slot(Device d) { return d.is_cpu() ? d.index : kMaxCpuDevices + d.index; }

Napi::Function TensorHandle::define(Napi::Env env) { return DefineClass(env, "NativeTensor", {}); }

TensorHandle::TensorHandle(const Napi::CallbackInfo& info) : Napi::ObjectWrap<TensorHandle>(info) {
  info.This().As<Napi::Object>().TypeTag(&kTensorTag);
}

void TensorHandle::attach(Napi::Env env, Tensor t) {
  counts_ = Addon::of(env).live;
  slot_ = live_slot(t.device());
  accounted_ = static_cast<int64_t>(t.nbytes());
  tensor = std::move(t);
  counts_->tensors[slot_].fetch_add(1);
  Addon::of(env).account_external(env, accounted_);
}

void TensorHandle::release(Napi::Env env) {
  if (!tensor) return;
  tensor.reset();  // queued work still holds the storage; it is freed when that work is done
  counts_->tensors[slot_].fetch_sub(1);
  Addon::of(env).account_external(env, -accounted_);
}

TensorHandle::~TensorHandle() { release(Env()); }

TensorHandle* TensorHandle::of(Napi::Object obj) {
  void* p = nullptr;
  if (napi_unwrap(obj.Env(), obj, &p) != napi_ok) return nullptr;  // unwrapped by dispose()
  return static_cast<TensorHandle*>(p);
}

void TensorHandle::dispose(Napi::Env env, Napi::Object obj) {
  release(env);
  // The wrap's finalizer is dropped; ~ObjectWrap then deletes the weak reference to `obj`.
  if (napi_remove_wrap(env, obj, nullptr) == napi_ok) delete this;
}

Napi::Value MetaCache::meta_of(Napi::Env env, const Tensor& t) {
  const int slot = live_slot(t.device());
  size_t hash = (t.shape.size() * 31u + static_cast<size_t>(t.dtype)) * 31u + static_cast<size_t>(slot);
  for (int64_t d : t.shape) hash = (hash * 1000003u) ^ static_cast<size_t>(d);
  Entry& e = entries_[hash % entries_.size()];
  if (!e.meta.IsEmpty() && e.device_slot == slot && e.dtype == t.dtype && e.shape == t.shape) return e.meta.Value();
  Napi::Array shape = Napi::Array::New(env, t.shape.size());
  for (size_t i = 0; i < t.shape.size(); ++i) shape.Set(static_cast<uint32_t>(i), Napi::Number::New(env, static_cast<double>(t.shape[i])));
  shape.Freeze();
  Napi::Object meta = Napi::Object::New(env);
  meta.Set("shape", shape);
  meta.Set("dtype", dtype_name(t.dtype));
  meta.Set("device", t.device().str());
  meta.Freeze();
  e.shape = t.shape;
  e.dtype = t.dtype;
  e.device_slot = slot;
  e.meta = Napi::Persistent(meta);
  return meta;
}

void MetaCache::define(Napi::Env env, Napi::Object obj, const Tensor& t) {
  if (key_.IsEmpty()) {
    Napi::Array holder = Napi::Array::New(env, 1);
    holder.Set(0u, Napi::String::New(env, "meta"));
    key_ = Napi::Persistent(holder);
  }
  // A plain data property (writable, enumerable, configurable): V8's fast path for adding one.
  obj.DefineProperties({Napi::PropertyDescriptor::Value(key_.Value().Get(0u), meta_of(env, t), napi_default_jsproperty)});
}

}  // namespace flock::js
