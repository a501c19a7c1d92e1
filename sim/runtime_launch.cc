// sim::launch, FLOCK_LAUNCH's entry point: geometry, stream and pointer checks on the launching
// thread, then the grid queued on the stream's executor (the engine's run_grid runs it there).
#include <cstdio>
#include "runtime_state.h"

namespace sim {
namespace {

std::string hex(const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%p", p);
  return buf;
}

// The first pointer argument the stream's device may not touch, described; "" when all are fine.
std::string foreign_pointer(const LaunchCfg& cfg, int device, const std::vector<const void*>& ptrs) {
  for (size_t i = 0; i < ptrs.size(); ++i) {
    auto a = rt::find_alloc(ptrs[i]);
    if (!a || rt::access_ok(device, *a)) continue;
    return std::string("kernel ") + (cfg.kernel ? cfg.kernel : "?") + " launched on cuda:" + std::to_string(device) +
           " was given pointer argument " + std::to_string(i) + " (" + hex(ptrs[i]) + ") in cuda:" + std::to_string(a->device) +
           " memory, and cuda:" + std::to_string(device) + " has no peer access to cuda:" + std::to_string(a->device) +
           " (cudaMemPoolSetAccess / cudaDeviceEnablePeerAccess)";
  }
  return "";
}

}  // namespace

void launch(const LaunchCfg& cfg, std::function<void()> body, std::vector<const void*> pointer_args) {
  if (rt::enter("launch")) return;
  if (const int bad = validate_launch(cfg.grid, cfg.block, cfg.shared_bytes)) {
    rt::record(static_cast<cudaError_t>(bad));
    return;
  }
  cudaError_t err = cudaSuccess;
  rt::StreamPtr s = rt::resolve_stream(cfg.stream, &err);
  if (!s) {
    rt::record(err);
    return;
  }
  // As in CUDA, a kernel goes to a stream of the current device only.
  if (s->device != rt::thread_state().current) {
    rt::record(cudaErrorInvalidResourceHandle);
    return;
  }
  if (cudaError_t e = rt::sticky_error(s->device)) {
    rt::record(e);
    return;
  }
  const int device = s->device;
  rt::Op op;
  const std::string bad = foreign_pointer(cfg, device, pointer_args);
  if (!bad.empty()) {
    // A GPU faults when the kernel runs, not at the launch: the error appears in stream order.
    op.run = [device, bad] { rt::set_sticky(device, cudaErrorIllegalAddress, bad); };
  } else {
    LaunchCfg c = cfg;
    op.run = [c, device, body = std::move(body)] {
      try {
        run_grid(c, body);
      } catch (const KernelFault& f) {
        rt::set_sticky(device, cudaErrorLaunchFailure, f.what());
        return;
      }
      static const bool hooked = (rt::register_exit_hook(), true);  // see register_exit_hook
      (void)hooked;
    };
  }
  rt::enqueue(s, std::move(op));
}

}  // namespace sim
