// Front ends of the global gradient norm and clipping: one queued kernel for a whole list of
// gradients, the norm kept on the device.
#include <cmath>
#include "nn.h"
#include "ops.h"

namespace flock::ops {
namespace {

void check_list(const std::vector<Tensor>& ts, const char* op) {
  if (ts.empty()) fail(Code::Arg, op, ": expected at least one tensor");
  for (size_t k = 0; k < ts.size(); ++k) {
    const Tensor& t = ts[k];
    if (!is_floating(t.dtype)) fail(Code::DType, op, ": tensor ", k, " must be floating, got ", dtype_name(t.dtype));
    if (t.device() != ts[0].device())
      fail(Code::Device, op, ": tensor ", k, " is on ", t.device().str(), ", tensor 0 on ", ts[0].device().str());
    if (t.dtype != ts[0].dtype)
      fail(Code::DType, op, ": tensor ", k, " is ", dtype_name(t.dtype), ", tensor 0 ", dtype_name(ts[0].dtype));
  }
}

}  // namespace

Tensor grad_norm(std::vector<Tensor> ts, double p) {
  check_list(ts, "gradNorm");
  if (!(p > 0)) fail(Code::Range, "gradNorm: the norm type must be > 0 (or Infinity), got ", p);
  const Device dev = ts[0].device();
  Tensor acc = empty({}, DType::f64, dev, "gradNorm");
  Tensor out = empty({}, ts[0].dtype, dev, "gradNorm");
  auto kernel = grad_norm_table().get(dev);
  enqueue("gradNorm", dev, [=]() mutable { kernel(ts, acc, out, p); });
  return out;
}

void clip_by_norm(std::vector<Tensor> ts, const Tensor& total, double max_norm) {
  check_list(ts, "clipByNorm");
  if (!(max_norm >= 0) || std::isinf(max_norm))
    fail(Code::Range, "clipByNorm: maxNorm must be a finite number ≥ 0, got ", max_norm);
  if (total.numel() != 1 || total.dtype != ts[0].dtype || total.device() != ts[0].device())
    fail(Code::Shape, "clipByNorm: the norm must be a one-element ", dtype_name(ts[0].dtype), " tensor on ", ts[0].device().str(),
         ", got ", shape_str(total.shape), " ", dtype_name(total.dtype), " on ", total.device().str());
  const Device dev = ts[0].device();
  auto kernel = clip_by_norm_table().get(dev);
  enqueue("clipByNorm", dev, [=]() mutable { kernel(ts, total, max_norm); });
}

}  // namespace flock::ops
