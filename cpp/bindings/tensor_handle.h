// The JS handle of a tensor: a type-tagged wrapper object owning one reference to the core
// tensor. dispose() (which also unwraps the object) or else the finalizer releases it exactly once.
// Every handle made by Addon::wrap also carries its tensor's metadata (`meta`, see MetaCache), so
// lib/tensor.ts builds a Tensor from an op's result without a second native call.
#pragma once
#include <napi.h>
#include <array>
#include <atomic>
#include <memory>
#include <optional>
#include "../tensor.h"

namespace flock::js {

// Live JS tensor handles per device ([i] cpu:i, [kMaxCpuDevices + i] cuda:i); shared so a
// finalizer that runs after the addon instance is gone still has somewhere to count.
struct LiveCounts {
  std::array<std::atomic<int64_t>, kMaxCpuDevices + kMaxCudaDevices> tensors{};
};

// The metadata of handles: each handle made by Addon::wrap gets one property, `meta`, a frozen
// object { shape (frozen array), dtype, device } shared by the handles of the same shape, dtype and
// device (a cache of recently used ones), so wrapping costs one property definition, not three
// plus an array. JS thread only.
class MetaCache {
 public:
  void define(Napi::Env env, Napi::Object obj, const Tensor& t);

 private:
  Napi::Value meta_of(Napi::Env env, const Tensor& t);

  struct Entry {
    Shape shape;
    DType dtype = DType::f32;
    int device_slot = -1;
    Napi::ObjectReference meta;
  };
  Napi::Reference<Napi::Array> key_;  // ['meta']: Node-API 8 keeps references to objects only
  std::array<Entry, 64> entries_;
};

class TensorHandle : public Napi::ObjectWrap<TensorHandle> {
 public:
  static Napi::Function define(Napi::Env env);
  explicit TensorHandle(const Napi::CallbackInfo& info);
  ~TensorHandle() override;
  void attach(Napi::Env env, Tensor t);
  void release(Napi::Env env);
  // The handle wrapped in `obj` (already checked to carry kTensorTag), or null once disposed.
  static TensorHandle* of(Napi::Object obj);
  // Releases the tensor, unwraps `obj` and deletes this: a disposed handle then costs the garbage
  // collector nothing (no Node-API finalizer is queued for it), and later uses see it disposed.
  void dispose(Napi::Env env, Napi::Object obj);

  std::optional<Tensor> tensor;

 private:
  int64_t accounted_ = 0;
  int slot_ = 0;
  std::shared_ptr<LiveCounts> counts_;
};

}  // namespace flock::js
