#include "tensor_handle.h"
#include <cmath>
#include "addon.h"
#include "convert.h"

namespace flock::js {

int live_slot(Device d) { return d.is_cpu() ? d.index : kMaxCpuDevices + d.index; }

double HandleTable::add(Tensor t) {
  uint32_t index;
  if (!free_.empty()) {
    index = free_.back();
    free_.pop_back();
  } else {
    if (slots_.size() >= kMaxSlots) fail(Code::OOM, "tensor: more than ", kMaxSlots, " live tensors");
    index = static_cast<uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  Slot& s = slots_[index];
  bytes_ += static_cast<int64_t>(t.nbytes());
  ++live_[static_cast<size_t>(live_slot(t.device()))];
  s.tensor = std::move(t);
  s.used = true;
  return kHandleBase + static_cast<double>(s.generation) * static_cast<double>(kMaxSlots) + index;
}

const Tensor* HandleTable::find(double handle) const {
  if (!well_formed(handle)) return nullptr;
  const auto rel = static_cast<uint64_t>(handle - kHandleBase);
  const auto index = static_cast<size_t>(rel & (kMaxSlots - 1));
  if (index >= slots_.size()) return nullptr;
  const Slot& s = slots_[index];
  if (!s.used || s.generation != static_cast<uint32_t>(rel >> kSlotBits)) return nullptr;
  return &s.tensor;
}

int64_t HandleTable::release(double handle) {
  if (!find(handle)) return -1;
  const auto rel = static_cast<uint64_t>(handle - kHandleBase);
  const auto index = static_cast<uint32_t>(rel & (kMaxSlots - 1));
  Slot& s = slots_[index];
  const auto bytes = static_cast<int64_t>(s.tensor.nbytes());
  bytes_ -= bytes;
  --live_[static_cast<size_t>(live_slot(s.tensor.device()))];
  s.tensor = Tensor{};  // queued work still holds the storage; it is freed when that work is done
  s.used = false;
  s.generation = (s.generation + 1) % kGenerations;
  free_.push_back(index);
  return bytes;
}

Napi::Array MetaCache::metas(Napi::Env env) {
  if (metas_.IsEmpty()) metas_ = Napi::Persistent(Napi::Array::New(env, entries_.size()));
  return metas_.Value();
}

uint32_t MetaCache::index_of(Napi::Env env, const Tensor& t) {
  const int slot = live_slot(t.device());
  size_t hash = (t.shape.size() * 31u + static_cast<size_t>(t.dtype)) * 31u + static_cast<size_t>(slot);
  for (int64_t d : t.shape) hash = (hash * 1000003u) ^ static_cast<size_t>(d);
  const auto index = static_cast<uint32_t>(hash % entries_.size());
  Entry& e = entries_[index];
  if (e.used && e.device_slot == slot && e.dtype == t.dtype && e.shape == t.shape) return index;
  Napi::Array shape = Napi::Array::New(env, t.shape.size());
  for (size_t i = 0; i < t.shape.size(); ++i)
    shape.Set(static_cast<uint32_t>(i), Napi::Number::New(env, static_cast<double>(t.shape[i])));
  shape.Freeze();
  Napi::Object meta = Napi::Object::New(env);
  meta.Set("shape", shape);
  meta.Set("dtype", dtype_name(t.dtype));
  meta.Set("device", t.device().str());
  meta.Freeze();
  metas(env).Set(index, meta);
  e.shape = t.shape;
  e.dtype = t.dtype;
  e.device_slot = slot;
  e.used = true;
  return index;
}

}  // namespace flock::js
