// Front end of GradScaler's fused unscale: checks the gradients and the found-inf flag, then queues
// one kernel call for the whole list.
#include <cmath>
#include "nn.h"
#include "ops.h"

namespace flock::ops {

void amp_unscale(std::vector<Tensor> ts, const Tensor& found_inf, double inv_scale) {
  if (!(std::isfinite(inv_scale) && inv_scale > 0))
    fail(Code::Range, "ampUnscale: the inverse scale must be finite and > 0, got ", inv_scale);
  if (found_inf.dtype != DType::f32 || found_inf.numel() != 1)
    fail(Code::DType, "ampUnscale: found_inf must be a one-element f32 tensor, got ", shape_str(found_inf.shape), " ",
         dtype_name(found_inf.dtype));
  const Device dev = found_inf.device();
  for (size_t k = 0; k < ts.size(); ++k) {
    if (!is_floating(ts[k].dtype))
      fail(Code::DType, "ampUnscale: gradient ", k, " must be floating, got ", dtype_name(ts[k].dtype));
    if (ts[k].device() != dev)
      fail(Code::Device, "ampUnscale: gradient ", k, " is on ", ts[k].device().str(), ", found_inf on ", dev.str());
  }
  if (ts.empty()) return;
  Tensor flag = found_inf;
  auto kernel = amp_unscale_table().get(dev);
  enqueue("ampUnscale", dev, [=]() mutable { kernel(ts, flag, inv_scale); });
}

}  // namespace flock::ops
