// Exports of the scan, sort, scatter, select and sample ops: cumsum/cumprod, sort/topk, scatter,
// scatterReduce, maskedSelect, nonzero and multinomial.
#include "../ops/ops.h"
#include "addon.h"
#include "convert.h"

namespace flock::js {
namespace {

constexpr int64_t kMaxDim = 64;
constexpr int64_t kBig = int64_t(1) << 48;

Napi::Value out(const Napi::CallbackInfo& info, Tensor t) { return Addon::of(info.Env()).wrap(info.Env(), std::move(t)); }

Napi::Value pair(const Napi::CallbackInfo& info, std::pair<Tensor, Tensor> p) {
  Napi::Array a = Napi::Array::New(info.Env(), 2);
  a.Set(0u, out(info, std::move(p.first)));
  a.Set(1u, out(info, std::move(p.second)));
  return a;
}

Napi::Value Scan(const Napi::CallbackInfo& info) {
  Args a{info, "scan"};
  const Tensor x = a.tensor(0, "x");
  return out(info, ops::scan(x, a.integer(1, "dim", -kMaxDim, kMaxDim), a.boolean(2, "prod"), a.boolean(3, "reverse")));
}

Napi::Value CumprodBackward(const Napi::CallbackInfo& info) {
  Args a{info, "cumprodBackward"};
  const Tensor x = a.tensor(0, "x");
  const Tensor g = a.tensor(1, "grad");
  return out(info, ops::cumprod_backward(x, g, a.integer(2, "dim", -kMaxDim, kMaxDim)));
}

Napi::Value Sort(const Napi::CallbackInfo& info) {
  Args a{info, "sort"};
  const Tensor x = a.tensor(0, "x");
  return pair(info, ops::sort(x, a.integer(1, "dim", -kMaxDim, kMaxDim), a.boolean(2, "descending")));
}

Napi::Value Topk(const Napi::CallbackInfo& info) {
  Args a{info, "topk"};
  const Tensor x = a.tensor(0, "x");
  return pair(info, ops::topk(x, a.integer(1, "k", 0, kBig), a.integer(2, "dim", -kMaxDim, kMaxDim), a.boolean(3, "largest")));
}

Napi::Value Scatter(const Napi::CallbackInfo& info) {
  Args a{info, "scatter"};
  const Tensor x = a.tensor(0, "x");
  const int64_t dim = a.integer(1, "dim", -kMaxDim, kMaxDim);
  return out(info, ops::scatter(x, dim, a.tensor(2, "index"), a.tensor(3, "src")));
}

const char* const kScatterReduceOps[] = {"sum", "prod", "mean", "amax", "amin"};
static_assert(sizeof(kScatterReduceOps) / sizeof(*kScatterReduceOps) == static_cast<size_t>(ScatterReduceOp::count));

Napi::Value ScatterReduce(const Napi::CallbackInfo& info) {
  Args a{info, "scatterReduce"};
  const Tensor x = a.tensor(0, "x");
  const int64_t dim = a.integer(1, "dim", -kMaxDim, kMaxDim);
  const Tensor index = a.tensor(2, "index");
  const Tensor src = a.tensor(3, "src");
  auto op = a.enumeration<ScatterReduceOp>(4, "reduce", kScatterReduceOps, static_cast<int>(ScatterReduceOp::count));
  return out(info, ops::scatter_reduce(x, dim, index, src, op, a.boolean(5, "includeSelf")));
}

Napi::Value MaskedSelect(const Napi::CallbackInfo& info) {
  Args a{info, "maskedSelect"};
  const Tensor x = a.tensor(0, "x");
  const Tensor mask = a.tensor(1, "mask");
  return out(info, ops::masked_select(x, mask, a.integer(2, "count", 0, kBig)));
}

Napi::Value Nonzero(const Napi::CallbackInfo& info) {
  Args a{info, "nonzero"};
  const Tensor mask = a.tensor(0, "mask");
  return out(info, ops::nonzero(mask, a.integer(1, "count", 0, kBig)));
}

Napi::Value Multinomial(const Napi::CallbackInfo& info) {
  Args a{info, "multinomial"};
  const Tensor probs = a.tensor(0, "probs");
  const int64_t n = a.integer(1, "numSamples", 1, kBig);
  const bool replacement = a.boolean(2, "replacement");
  const int64_t seed = a.integer(3, "seed", 0, int64_t(1) << 53);
  const int64_t offset = a.integer(4, "offset", 0, int64_t(1) << 53);
  return out(info, ops::multinomial(probs, n, replacement, static_cast<uint64_t>(seed), static_cast<uint64_t>(offset)));
}

}  // namespace


}  // namespace flock::js

#include "../generated/register_select_ops.inc"
