// The JS handle of a tensor: a type-tagged wrapper object owning one reference to the core
// tensor. dispose() and the finalizer release it exactly once.
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
