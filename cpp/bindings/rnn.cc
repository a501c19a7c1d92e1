// Recurrent layer exports (ops/rnn.h): one layer and direction per call.
//   rnnForward(mode, gx, weightHh, biasHh | null, h0, c0 | null, reverse, save) -> [states, saved]
//   rnnBackward(mode, grad, states, saved | null, weightHh, reverse, wantWeight, wantBias, wantH0, wantC0)
//     -> [dgx, dweightHh | null, dbiasHh | null, dh0 | null, dc0 | null]
#include "../ops/rnn.h"
#include "addon.h"
#include "convert.h"

namespace flock::js {
namespace {

const char* const kRnnModeNames[] = {"rnn_tanh", "rnn_relu", "lstm", "gru"};
static_assert(sizeof(kRnnModeNames) / sizeof(kRnnModeNames[0]) == static_cast<size_t>(RnnMode::count), "one name per RnnMode");

Napi::Value wrap(const Napi::CallbackInfo& info, const std::optional<Tensor>& t) {
  return t ? Addon::of(info.Env()).wrap(info.Env(), *t) : info.Env().Null();
}

RnnMode mode_of(const Args& a) { return a.enumeration<RnnMode>(0, "mode", kRnnModeNames, static_cast<int>(RnnMode::count)); }

Napi::Value RnnForward(const Napi::CallbackInfo& info) {
  Args a{info, "rnn"};
  const RnnMode mode = mode_of(a);
  Tensor gx = a.tensor(1, "input"), w = a.tensor(2, "weightHh");
  const bool has_b = present(a, 3), has_c = present(a, 5);
  Tensor b = has_b ? a.tensor(3, "biasHh") : Tensor{};
  Tensor h0 = a.tensor(4, "h0");
  Tensor c0 = has_c ? a.tensor(5, "c0") : Tensor{};
  std::vector<Tensor> r = ops::rnn_forward(mode, gx, w, has_b ? &b : nullptr, h0, has_c ? &c0 : nullptr, a.boolean(6, "reverse"),
                                           a.boolean(7, "save"));
  Napi::Array arr = Napi::Array::New(info.Env(), 2);
  arr.Set(0u, wrap(info, r[0]));
  arr.Set(1u, r[1].numel() > 0 ? wrap(info, r[1]) : info.Env().Null());
  return arr;
}

Napi::Value RnnBackward(const Napi::CallbackInfo& info) {
  Args a{info, "rnnBackward"};
  const RnnMode mode = mode_of(a);
  Tensor g = a.tensor(1, "grad"), states = a.tensor(2, "states");
  const bool has_saved = present(a, 3);
  Tensor saved = has_saved ? a.tensor(3, "saved") : Tensor{};
  Tensor w = a.tensor(4, "weightHh");
  ops::RnnGrads r =
      ops::rnn_backward(mode, g, states, has_saved ? &saved : nullptr, w, a.boolean(5, "reverse"), a.boolean(6, "wantWeight"),
                        a.boolean(7, "wantBias"), a.boolean(8, "wantH0"), a.boolean(9, "wantC0"));
  Napi::Array arr = Napi::Array::New(info.Env(), 5);
  arr.Set(0u, wrap(info, r.dgx));
  arr.Set(1u, wrap(info, r.dw_hh));
  arr.Set(2u, wrap(info, r.db_hh));
  arr.Set(3u, wrap(info, r.dh0));
  arr.Set(4u, wrap(info, r.dc0));
  return arr;
}

}  // namespace

}  // namespace flock::js

#include "../generated/register_rnn.inc"
