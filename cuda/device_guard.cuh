// The one device guard of the CUDA backend: makes a device the calling thread's current one for a
// scope and restores the previous one after. Streams, the allocator and the NCCL groups all use it.
#pragma once
#include <cuda_runtime.h>
#include "common.cuh"

namespace flock::cuda {

class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    if (cudaGetDevice(&prev_) != cudaSuccess) {
      cudaGetLastError();  // a failed query must not be reported by the next launch as its own
      prev_ = -1;
    }
    if (prev_ != device) check(cudaSetDevice(device), "cudaSetDevice");
  }
  ~DeviceGuard() {
    int now = -1;
    if (cudaGetDevice(&now) != cudaSuccess) cudaGetLastError();
    if (prev_ >= 0 && now != prev_ && cudaSetDevice(prev_) != cudaSuccess) cudaGetLastError();
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int prev_ = -1;
};

}  // namespace flock::cuda
