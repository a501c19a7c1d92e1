// What the CUDA runtime files share: the device set (device.cu) and the stream a buffer of a
// device is allocated and freed on (stream.cu).
#pragma once
#include <cuda_runtime.h>

namespace flock::cuda {

// CUDA devices visible to the process, read once (0 without a driver).
int known_device_count();
// Throws ERR_DEVICE unless `device` is a visible CUDA device index.
void check_device(int device);
// The running task's stream when it is on `device`, else the calling thread's context stream for
// it, else null (the legacy default stream, ordered against every blocking stream of the device).
cudaStream_t stream_for(int device);
// Drops the kept closures of the calling thread's stream for `device` whose work has finished, so
// their storages are freed now rather than at the stream's next enqueue or sync (the allocator's
// last resort before ERR_OOM, after it has waited for the device).
void release_finished_work(int device) noexcept;

}  // namespace flock::cuda
