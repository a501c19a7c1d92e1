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

Napi::Value MetaCache::shape_array(Napi::Env env, const Shape& shape) {
  size_t hash = shape.size();
  for (int64_t d : shape) hash = (hash * 1000003u) ^ static_cast<size_t>(d);
  ShapeEntry& e = shapes_[hash % shapes_.size()];
  if (!e.array.IsEmpty() && e.shape == shape) return e.array.Value();
  Napi::Array arr = Napi::Array::New(env, shape.size());
  for (size_t i = 0; i < shape.size(); ++i) arr.Set(static_cast<uint32_t>(i), Napi::Number::New(env, static_cast<double>(shape[i])));
  arr.Freeze();
  e.shape = shape;
  e.array = Napi::Persistent(arr);
  return arr;
}

namespace {
// Slots of MetaCache::strings_: the three property names, then the dtype names, then the device names.
constexpr const char* kKeys[] = {"shape", "dtype", "device"};
constexpr uint32_t kDTypeSlot = 3, kDeviceSlot = kDTypeSlot + 8;

// The string in slot `i` of `strings`, made from `text()` the first time.
template <class Text> Napi::Value string_in(Napi::Env env, Napi::Array strings, uint32_t i, Text text) {
  Napi::Value v = strings.Get(i);
  if (v.IsString()) return v;
  Napi::String s = Napi::String::New(env, text());
  strings.Set(i, s);
  return s;
}
}  // namespace

void MetaCache::define(Napi::Env env, Napi::Object obj, const Tensor& t) {
  if (strings_.IsEmpty()) {
    Napi::Array strings = Napi::Array::New(env);
    for (uint32_t i = 0; i < 3; ++i) strings.Set(i, Napi::String::New(env, kKeys[i]));
    strings_ = Napi::Persistent(strings);
  }
  Napi::Array strings = strings_.Value();
  const Device d = t.device();
  Napi::Value dtype = string_in(env, strings, kDTypeSlot + static_cast<uint32_t>(t.dtype), [&] { return dtype_name(t.dtype); });
  Napi::Value device = string_in(env, strings, kDeviceSlot + static_cast<uint32_t>(live_slot(d)), [&] { return d.str(); });
  constexpr auto kReadOnly = napi_enumerable;  // neither writable nor configurable
  obj.DefineProperties({
      Napi::PropertyDescriptor::Value(strings.Get(0u), shape_array(env, t.shape), kReadOnly),
      Napi::PropertyDescriptor::Value(strings.Get(1u), dtype, kReadOnly),
      Napi::PropertyDescriptor::Value(strings.Get(2u), device, kReadOnly),
  });
}

}  // namespace flock::js
