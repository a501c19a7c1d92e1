// The op exports whose bindings are more than argument conversion (the rest are generated from
// types/decl/ops.ts into cpp/generated/bindings_ops.cc).
#include "../ops/ops.h"
#include "convert.h"

namespace flock::js {
namespace {

Napi::Value FillInPlace(const Napi::CallbackInfo& info) {
  Args a{info, "fill_"};
  Tensor self = a.tensor_even_failed(0, "self");
  const double value = a.number(1, "value");
  // Writing every element makes a failed tensor good again (zeroGrad(false) after a failed step);
  // a fill of part of it leaves the rest never computed.
  const bool whole = self.offset == 0 && self.nbytes() == self.storage->bytes;
  if (self.storage->failure()) {
    if (!whole) a.tensor(0, "self");  // throws the failure
    // Good again from here; should the fill itself be dropped, its task marks it failed anew.
    OpScope::record(self.storage);
    self.storage->clear_failure();
  }
  ops::fill_(self, value);
  return info.Env().Undefined();
}

// matmulInto(a, b, transA, transB, out, compute | null): whether out += op(a)·op(b) was queued.
Napi::Value MatmulInto(const Napi::CallbackInfo& info) {
  Args a{info, "matmul"};
  Tensor out = a.tensor(4, "out");
  const bool lowered = present(a, 5);
  const DType compute = lowered ? a.dtype(5) : DType::f32;
  return Napi::Boolean::New(info.Env(), ops::matmul_into(a.tensor(0, "a"), a.tensor(1, "b"), a.boolean(2, "transA"),
                                                         a.boolean(3, "transB"), lowered ? &compute : nullptr, out));
}

}  // namespace
}  // namespace flock::js

#include "../generated/register_ops.inc"
