// CUDA devices for the GpuRuntime table: how many there are, their names, memory and the runtime
// version. Loading never touches the driver: the static initialiser only fills tables.
#include <cuda_runtime.h>
#include <string>
#include "common.cuh"
#include "device.cuh"
#include "device_guard.cuh"
#include "gpu_runtime.h"
#include "profiler.h"

// cuda/nvtx.cu
void flockml_nvtx_push(const char* name);
void flockml_nvtx_pop();

namespace flock::cuda {
namespace {

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no driver" error
    return 0;
  }
  return n;
}

// A failed query leaves a sticky error that the next launch would report as its own: every
// failure here is cleared where it occurs and reported in the result.
std::string device_name(int index) {
  cudaDeviceProp p;
  const cudaError_t e = cudaGetDeviceProperties(&p, index);
  if (e != cudaSuccess) {
    cudaGetLastError();
    return std::string("unknown (") + cudaGetErrorString(e) + ")";
  }
  return p.name;
}

// Leaves the outputs as they are (the caller's "unknown") when the device cannot be queried.
void memory_info(int index, int64_t* free_bytes, int64_t* total_bytes) {
  size_t f = 0, t = 0;
  try {
    DeviceGuard g(index);
    if (cudaMemGetInfo(&f, &t) != cudaSuccess) {
      cudaGetLastError();
      return;
    }
  } catch (const Error&) {
    return;  // cudaSetDevice failed; the guard cleared its error
  }
  *free_bytes = static_cast<int64_t>(f);
  *total_bytes = static_cast<int64_t>(t);
}

std::string version() {
  int v = 0;
  if (cudaRuntimeGetVersion(&v) != cudaSuccess) {
    cudaGetLastError();
    return "unknown";
  }
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

const bool registered = [] {
  GpuRuntime& rt = gpu_runtime();
  rt.device_count = device_count;
  rt.device_name = device_name;
  rt.memory_info = memory_info;
  rt.version = version;
  profiler::range_hooks().push = flockml_nvtx_push;
  profiler::range_hooks().pop = flockml_nvtx_pop;
  return true;
}();

}  // namespace

// The device set of a process does not change, so the count is read once, on first use.
int known_device_count() {
  static const int n = device_count();
  return n;
}

void check_device(int device) {
  const int n = known_device_count();
  if (device < 0 || device >= n || device >= kMaxCudaDevices)
    fail(Code::Device, "device cuda:", device, " is not available (", n, " CUDA devices found)");
}

}  // namespace flock::cuda
