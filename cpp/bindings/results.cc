#include "results.h"
#include "addon.h"

namespace flock::js {

Napi::Value result(const Napi::CallbackInfo& info, Tensor t) { return Addon::of(info.Env()).wrap(info.Env(), std::move(t)); }

Napi::Value result(const Napi::CallbackInfo& info, std::pair<Tensor, Tensor> ts) {
  Napi::Array a = Napi::Array::New(info.Env(), 2);
  a.Set(0u, result(info, std::move(ts.first)));
  a.Set(1u, result(info, std::move(ts.second)));
  return a;
}

Napi::Value result(const Napi::CallbackInfo& info, std::vector<Tensor> ts) {
  Napi::Array a = Napi::Array::New(info.Env(), ts.size());
  for (uint32_t i = 0; i < ts.size(); ++i) a.Set(i, result(info, std::move(ts[i])));
  return a;
}

}  // namespace flock::js
