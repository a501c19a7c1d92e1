// What a binding hands back to JS: new tensors become handles (Addon::wrap), several as an array.
#pragma once
#include <napi.h>
#include <utility>
#include <vector>
#include "../tensor.h"

namespace flock::js {

Napi::Value result(const Napi::CallbackInfo& info, Tensor t);
Napi::Value result(const Napi::CallbackInfo& info, std::pair<Tensor, Tensor> ts);
Napi::Value result(const Napi::CallbackInfo& info, std::vector<Tensor> ts);

}  // namespace flock::js
