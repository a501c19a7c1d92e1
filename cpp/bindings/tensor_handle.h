// The JS handle of a tensor: a type-tagged wrapper object owning one reference to the core
// tensor. dispose() and the finalizer release it exactly once. Every handle made by Addon::wrap
// also carries its tensor's metadata as read-only properties (`shape`, a frozen array; `dtype`;
// `device`), so lib/tensor.ts builds a Tensor from an op's result without a second native call.
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

// The JS values of handle metadata, made once per environment: the property names, the dtype and
// device names (held in one array: Node-API 8 references only objects), and the frozen shape arrays
// of recently wrapped shapes (immutable, so handles of one shape share one array). JS thread only.
class MetaCache {
 public:
  // Defines `shape`, `dtype` and `device` on `obj` (a new handle) for `t`.
  void define(Napi::Env env, Napi::Object obj, const Tensor& t);

 private:
  Napi::Value shape_array(Napi::Env env, const Shape& shape);

  struct ShapeEntry {
    Shape shape;
    Napi::Reference<Napi::Array> array;
  };
  Napi::Reference<Napi::Array> strings_;  // see kKeys and the slots in define()
  std::array<ShapeEntry, 64> shapes_;
};

class TensorHandle : public Napi::ObjectWrap<TensorHandle> {
 public:
  static Napi::Function define(Napi::Env env);
  explicit TensorHandle(const Napi::CallbackInfo& info);
  ~TensorHandle() override;
  void attach(Napi::Env env, Tensor t);
  void release(Napi::Env env);

  std::optional<Tensor> tensor;

 private:
  int64_t accounted_ = 0;
  int slot_ = 0;
  std::shared_ptr<LiveCounts> counts_;
};

}  // namespace flock::js
