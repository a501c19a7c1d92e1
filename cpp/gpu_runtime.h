// What the CPU core knows of a GPU runtime: a small table the CUDA backend fills in when it is
// compiled in. Without it, flockml reports no GPU and CUDA devices are refused with ERR_DEVICE.
#pragma once
#include <cstdint>
#include <string>

namespace flock {

struct GpuRuntime {
  int (*device_count)() = nullptr;  // 0 when there is no driver or no device
  std::string (*device_name)(int index) = nullptr;
  void (*memory_info)(int index, int64_t* free_bytes, int64_t* total_bytes) = nullptr;
  std::string (*version)() = nullptr;
  // Set only by the CUDA simulator's addon (FLOCKML_CUDA=SIM, sim/): its devices' state as JSON
  // (contexts, memory, streams) and its fault-injection plan, for the simulator's tests.
  std::string (*sim_state)() = nullptr;
  void (*sim_set_faults)(const std::string& spec) = nullptr;
};

GpuRuntime& gpu_runtime();
int gpu_device_count();

}  // namespace flock
