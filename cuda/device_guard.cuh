// The one device guard of the CUDA backend: makes a device the calling thread's current one for a
// scope and restores the previous one after. Streams, the allocator and the NCCL groups all use it.
//
// Since CUDA 12, cudaSetDevice creates the device's primary context (hundreds of MB of GPU memory).
// A fresh thread's cudaGetDevice answers 0 without any context existing, so a guard that "restored"
// that 0 would put a context on GPU 0 in every process that only ever works on another GPU (every
// rank of a multi-GPU job). The guard therefore restores only a device that flockml itself made
// current on this thread; on a thread where none was, the guarded device simply stays current.
#pragma once
#include <cuda_runtime.h>
#include "common.cuh"

namespace flock::cuda {

// The device flockml last made current on this thread; -1 while it has made none current.
inline thread_local int t_current_device = -1;

// cudaSetDevice, remembered as this thread's own choice. Throws ERR_CUDA on failure.
inline void set_current_device(int device) {
  check(cudaSetDevice(device), "cudaSetDevice");
  t_current_device = device;
}

// The same for threads that own one device for life (a stream's notifier, a group's watcher): a
// failure is cleared and left for the thread's first real call to report.
inline void try_set_current_device(int device) noexcept {
  if (cudaSetDevice(device) == cudaSuccess)
    t_current_device = device;
  else
    cudaGetLastError();
}

class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    int now = -1;
    if (cudaGetDevice(&now) != cudaSuccess) {
      cudaGetLastError();  // a failed query must not be reported by the next launch as its own
      now = -1;
    }
    prev_ = t_current_device >= 0 ? now : -1;
    if (now != device)
      set_current_device(device);
    else
      t_current_device = device;
  }
  ~DeviceGuard() {
    if (prev_ < 0 || prev_ == t_current_device) return;
    if (cudaSetDevice(prev_) != cudaSuccess)
      cudaGetLastError();
    else
      t_current_device = prev_;
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int prev_ = -1;
};

}  // namespace flock::cuda
