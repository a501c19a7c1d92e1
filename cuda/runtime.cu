// CUDA runtime glue: device enumeration and properties, reported to the core through the
// GpuRuntime table. Loading never fails without a driver: every query degrades to "no device".
#include <cuda_runtime.h>
#include <string>
#include "gpu_runtime.h"

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

std::string device_name(int index) {
  cudaDeviceProp p;
  if (cudaGetDeviceProperties(&p, index) != cudaSuccess) return "unknown";
  return p.name;
}

void memory_info(int index, int64_t* free_bytes, int64_t* total_bytes) {
  size_t f = 0, t = 0;
  int prev = 0;
  cudaGetDevice(&prev);
  if (cudaSetDevice(index) == cudaSuccess && cudaMemGetInfo(&f, &t) == cudaSuccess) {
    *free_bytes = static_cast<int64_t>(f);
    *total_bytes = static_cast<int64_t>(t);
  }
  cudaSetDevice(prev);
}

std::string version() {
  int v = 0;
  cudaRuntimeGetVersion(&v);
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

const bool registered = [] {
  GpuRuntime& rt = gpu_runtime();
  rt.device_count = device_count;
  rt.device_name = device_name;
  rt.memory_info = memory_info;
  rt.version = version;
  return true;
}();

}  // namespace
}  // namespace flock::cuda
