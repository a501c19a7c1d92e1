// A stand-in for the kernel engine (sim/engine*.cc) so the runtime's tests build without it:
// validate_launch applies the documented limits, run_grid calls the body once per thread with no
// thread indices (the runtime tests' bodies do not read them).
#include "sim.h"

namespace sim {

int validate_launch(const dim3& g, const dim3& b, size_t shared) {
  const unsigned long long threads = 1ull * b.x * b.y * b.z;
  if (!g.x || !g.y || !g.z || !b.x || !b.y || !b.z) return 9;
  if (threads > 1024 || b.x > 1024 || b.y > 1024 || b.z > 64) return 9;
  if (g.x > 2147483647u || g.y > 65535 || g.z > 65535 || shared > 48 * 1024) return 9;
  return 0;
}

void run_grid(const LaunchCfg& cfg, const std::function<void()>& body) {
  const unsigned long long n = 1ull * cfg.grid.x * cfg.grid.y * cfg.grid.z * cfg.block.x * cfg.block.y * cfg.block.z;
  for (unsigned long long i = 0; i < n; ++i) body();
}

}  // namespace sim
