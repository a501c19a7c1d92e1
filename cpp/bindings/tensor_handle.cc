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

}  // namespace flock::js
