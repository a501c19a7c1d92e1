// Connects the simulator to the core's GpuRuntime table: the simulated devices' state as JSON and
// the fault-injection plan, which the bindings expose as cudaSimState() / cudaSimFail() so tests
// can assert what real CUDA cannot show (which devices have a context, what the pools hold).
#include <string>
#include "gpu_runtime.h"
#include "sim.h"

namespace {

std::string state_json() {
  std::string out = "{\"devices\":[";
  const int n = sim::device_count();
  for (int d = 0; d < n; ++d) {
    const sim::DeviceStats s = sim::device_stats(d);
    if (d) out += ',';
    out += "{\"context\":" + std::string(s.context ? "true" : "false") + ",\"memoryCap\":" + std::to_string(s.memory_cap) +
           ",\"used\":" + std::to_string(s.used) + ",\"reserved\":" + std::to_string(s.reserved) +
           ",\"liveStreams\":" + std::to_string(s.live_streams) + "}";
  }
  out += "],\"held\":[";
  const std::vector<std::string> held = sim::held_calls();
  for (size_t i = 0; i < held.size(); ++i) out += (i ? ",\"" : "\"") + held[i] + "\"";
  return out + "]}";
}

const bool registered = [] {
  flock::GpuRuntime& rt = flock::gpu_runtime();
  rt.sim_state = state_json;
  rt.sim_set_faults = [](const std::string& spec) { sim::set_faults(spec); };
  return true;
}();

}  // namespace
