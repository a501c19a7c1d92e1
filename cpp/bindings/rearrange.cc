// Exports of the ops that rearrange elements without arithmetic: tril/triu, flip, roll.
#include "../ops/ops.h"
#include "addon.h"
#include "convert.h"

namespace flock::js {
namespace {

constexpr int64_t kMaxDim = 64;
constexpr int64_t kBig = int64_t(1) << 48;

Napi::Value out(const Napi::CallbackInfo& info, Tensor t) { return Addon::of(info.Env()).wrap(info.Env(), std::move(t)); }

Napi::Value Triangular(const Napi::CallbackInfo& info) {
  Args a{info, "triangular"};
  const Tensor& x = a.tensor(0, "x");
  return out(info, ops::triangular(x, a.integer(1, "diagonal", -kBig, kBig), a.boolean(2, "upper")));
}

Napi::Value Flip(const Napi::CallbackInfo& info) {
  Args a{info, "flip"};
  const Tensor& x = a.tensor(0, "x");
  return out(info, ops::flip(x, a.ints(1, "dims", -kMaxDim, kMaxDim, kMaxDim)));
}

Napi::Value Roll(const Napi::CallbackInfo& info) {
  Args a{info, "roll"};
  const Tensor& x = a.tensor(0, "x");
  return out(info, ops::roll(x, a.ints(1, "shifts", -kBig, kBig, kMaxDim), a.ints(2, "dims", -kMaxDim, kMaxDim, kMaxDim)));
}

}  // namespace


}  // namespace flock::js

#include "../generated/register_rearrange.inc"
