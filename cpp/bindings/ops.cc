// Op exports: thin wrappers that convert arguments, call the op front end and wrap the result.
#include "../ops/ops.h"
#include "addon.h"
#include "convert.h"
#include "../generated/unary_codes.h"
#include "../generated/binary_codes.h"
#include "../generated/reduce_codes.h"

namespace flock::js {
namespace {

// The op names (kUnaryOpNames, ...) are generated from the manifest: cpp/generated/<family>_codes.h.
constexpr int kUnaryOps = static_cast<int>(UnaryOp::count);
constexpr int kBinaryOps = static_cast<int>(BinaryOp::count);
constexpr int kReduceOps = static_cast<int>(ReduceOp::count);

constexpr int64_t kMaxDim = 64;

Napi::Value out(const Napi::CallbackInfo& info, Tensor t) { return Addon::of(info.Env()).wrap(info.Env(), std::move(t)); }

double optional_number(const Args& a, size_t i, const char* name) { return a.at(i).IsUndefined() ? 0.0 : a.number(i, name); }

Napi::Value Unary(const Napi::CallbackInfo& info) {
  Args a{info, "unary"};
  auto op = a.enumeration<UnaryOp>(0, "op", kUnaryOpNames, kUnaryOps);
  return out(info, ops::unary(op, a.tensor(1, "x"), optional_number(a, 2, "a"), optional_number(a, 3, "b")));
}

Napi::Value UnaryBackward(const Napi::CallbackInfo& info) {
  Args a{info, "unaryBackward"};
  auto op = a.enumeration<UnaryOp>(0, "op", kUnaryOpNames, kUnaryOps);
  return out(info, ops::unary_backward(op, a.tensor(1, "x"), a.tensor(2, "grad"), optional_number(a, 3, "a"), optional_number(a, 4, "b")));
}

Napi::Value Binary(const Napi::CallbackInfo& info) {
  Args a{info, "binary"};
  auto op = a.enumeration<BinaryOp>(0, "op", kBinaryOpNames, kBinaryOps);
  return out(info, ops::binary(op, a.tensor(1, "a"), a.tensor(2, "b")));
}

Napi::Value BinaryInPlace(const Napi::CallbackInfo& info) {
  Args a{info, "binary_"};
  auto op = a.enumeration<BinaryOp>(0, "op", kBinaryOpNames, kBinaryOps);
  Tensor self = a.tensor(1, "self");
  return Napi::Boolean::New(info.Env(), ops::binary_(op, self, a.tensor(2, "b")));
}

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

Napi::Value Where(const Napi::CallbackInfo& info) {
  Args a{info, "where"};
  return out(info, ops::where(a.tensor(0, "condition"), a.tensor(1, "a"), a.tensor(2, "b")));
}

Napi::Value Cast(const Napi::CallbackInfo& info) {
  Args a{info, "cast"};
  return out(info, ops::cast(a.tensor(0, "x"), a.dtype(1)));
}

Napi::Value Clone(const Napi::CallbackInfo& info) {
  Args a{info, "clone"};
  return out(info, ops::clone(a.tensor(0, "x")));
}

Napi::Value CopyInPlace(const Napi::CallbackInfo& info) {
  Args a{info, "copy_"};
  Tensor dst = a.tensor(0, "dst");
  ops::copy_(dst, a.tensor(1, "src"));
  return info.Env().Undefined();
}

Napi::Value To(const Napi::CallbackInfo& info) {
  Args a{info, "to"};
  return out(info, ops::to_device(a.tensor(0, "x"), a.device(1)));
}

Napi::Value Reduce(const Napi::CallbackInfo& info) {
  Args a{info, "reduce"};
  auto op = a.enumeration<ReduceOp>(0, "op", kReduceOpNames, kReduceOps);
  const Tensor& x = a.tensor(1, "x");
  Shape dims = a.dims(2, "dims", -kMaxDim, kMaxDim);
  return out(info, ops::reduce(op, x, std::move(dims), a.boolean(3, "keepdim"), optional_number(a, 4, "correction")));
}

Napi::Value Softmax(const Napi::CallbackInfo& info) {
  Args a{info, "softmax"};
  const Tensor& x = a.tensor(0, "x");
  return out(info, ops::softmax(x, a.integer(1, "dim", -kMaxDim, kMaxDim), a.boolean(2, "log")));
}

Napi::Value Matmul(const Napi::CallbackInfo& info) {
  Args a{info, "matmul"};
  return out(info, ops::matmul(a.tensor(0, "a"), a.tensor(1, "b"), a.boolean(2, "transA"), a.boolean(3, "transB")));
}

Napi::Value MatmulLowered(const Napi::CallbackInfo& info) {
  Args a{info, "matmul"};
  return out(info, ops::matmul_lowered(a.tensor(0, "a"), a.tensor(1, "b"), a.boolean(2, "transA"), a.boolean(3, "transB"), a.dtype(4),
                                       a.dtype(5)));
}

// matmulInto(a, b, transA, transB, out, compute | null): whether out += op(a)·op(b) was queued.
Napi::Value MatmulInto(const Napi::CallbackInfo& info) {
  Args a{info, "matmul"};
  Tensor out = a.tensor(4, "out");
  const bool lowered = !a.at(5).IsNull() && !a.at(5).IsUndefined();
  const DType compute = lowered ? a.dtype(5) : DType::f32;
  return Napi::Boolean::New(info.Env(), ops::matmul_into(a.tensor(0, "a"), a.tensor(1, "b"), a.boolean(2, "transA"), a.boolean(3, "transB"),
                                                         lowered ? &compute : nullptr, out));
}

Napi::Value Reshape(const Napi::CallbackInfo& info) {
  Args a{info, "reshape"};
  const Tensor& x = a.tensor(0, "x");
  return out(info, ops::reshape(x, a.ints(1, "shape", -1, int64_t(1) << 48)));
}

Napi::Value Narrow(const Napi::CallbackInfo& info) {
  Args a{info, "narrow"};
  const Tensor& x = a.tensor(0, "x");
  const int64_t big = int64_t(1) << 48;
  return out(info, ops::narrow(x, a.integer(1, "dim", -kMaxDim, kMaxDim), a.integer(2, "start", -big, big), a.integer(3, "length", 0, big)));
}

Napi::Value Permute(const Napi::CallbackInfo& info) {
  Args a{info, "permute"};
  const Tensor& x = a.tensor(0, "x");
  return out(info, ops::permute(x, a.ints(1, "dims", -kMaxDim, kMaxDim)));
}

Napi::Value Expand(const Napi::CallbackInfo& info) {
  Args a{info, "expand"};
  const Tensor& x = a.tensor(0, "x");
  return out(info, ops::expand(x, a.ints(1, "shape", -1, int64_t(1) << 48)));
}

Napi::Value Cat(const Napi::CallbackInfo& info) {
  Args a{info, "cat"};
  auto xs = a.tensors(0, "tensors");
  return out(info, ops::cat(xs, a.integer(1, "dim", -kMaxDim, kMaxDim)));
}

// The ops that look rows up with indexSelect and name themselves in its errors.
const char* const kIndexSelectOps[] = {"indexSelect", "embedding"};

Napi::Value IndexSelect(const Napi::CallbackInfo& info) {
  Args a{info, "indexSelect"};
  const Tensor& x = a.tensor(0, "x");
  const int op = a.at(3).IsUndefined() ? 0 : a.enumeration<int>(3, "op", kIndexSelectOps, 2);
  return out(info, ops::index_select(x, a.integer(1, "dim", -kMaxDim, kMaxDim), a.tensor(2, "index"), kIndexSelectOps[op]));
}

// The ops that pick values with gather and name themselves in its errors.
const char* const kGatherOps[] = {"gather", "nllLoss"};

Napi::Value Gather(const Napi::CallbackInfo& info) {
  Args a{info, "gather"};
  const Tensor& x = a.tensor(0, "x");
  const int op = a.at(3).IsUndefined() ? 0 : a.enumeration<int>(3, "op", kGatherOps, 2);
  return out(info, ops::gather(x, a.integer(1, "dim", -kMaxDim, kMaxDim), a.tensor(2, "index"), kGatherOps[op]));
}

Napi::Value ScatterAdd(const Napi::CallbackInfo& info) {
  Args a{info, "scatterAdd"};
  const Tensor& x = a.tensor(0, "x");
  return out(info, ops::scatter_add(x, a.integer(1, "dim", -kMaxDim, kMaxDim), a.tensor(2, "index"), a.tensor(3, "src")));
}

}  // namespace


}  // namespace flock::js

#include "../generated/register_ops.inc"
