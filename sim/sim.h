// The CUDA simulator's internal interface (FLOCKML_CUDA=SIM builds only): what the force-included
// kernel header (sim/cuda_sim.h), the kernel engine (sim/engine.cc) and the simulated runtime
// (sim/runtime*.cc) promise each other. Nothing here is part of flockml's public surface.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

// CUDA's vector types, as <vector_types.h> declares them.
struct uint3 {
  unsigned x, y, z;
};
struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1) : x(vx), y(vy), z(vz) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
  constexpr operator uint3() const { return uint3{x, y, z}; }
};

typedef struct CUstream_st* cudaStream_t;

namespace sim {

// One kernel launch as FLOCK_LAUNCH wrote it.
struct LaunchCfg {
  dim3 grid;
  dim3 block;
  size_t shared_bytes;
  cudaStream_t stream;
  const char* kernel;  // the kernel's name as written at the launch site
};

// A kernel broke a rule a GPU would trap on (a barrier not every thread reaches, a warp collective
// with missing lanes, a deadlock). what() names the kernel. The runtime turns it into a sticky
// cudaErrorLaunchFailure on the stream's device and keeps the message for cudaGetErrorString.
struct KernelFault : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// --- engine (sim/engine.cc) ---
// 0 when the geometry is launchable, else cudaErrorInvalidConfiguration's value (9): block
// threads <= 1024, block z <= 64, grid x <= 2^31-1, grid y and z <= 65535, shared bytes <= 48 KiB,
// no zero dimension.
int validate_launch(const dim3& grid, const dim3& block, size_t shared_bytes);
// Runs every block of the grid and returns when all are done; the calling thread takes part.
// `thread_body` runs once per simulated thread with threadIdx/blockIdx/... set. Throws KernelFault.
void run_grid(const LaunchCfg& cfg, const std::function<void()>& thread_body);

// --- runtime (sim/runtime*.cc) ---
// FLOCK_LAUNCH's entry point, called on the launching host thread: validates the geometry
// (failure: sets the thread's last error to cudaErrorInvalidConfiguration, returns), checks that
// every pointer argument that is device memory belongs to the stream's device or one it has peer
// access to (else cudaErrorIllegalAddress, sticky), then queues run_grid on the stream.
void launch(const LaunchCfg& cfg, std::function<void()> thread_body, std::vector<const void*> pointer_args);
// Queues `op` on the stream, ordered like any other stream work (the CUB shims use it). The op
// runs on the stream's executor thread; an exception it throws becomes a sticky launch failure.
void enqueue_host_op(cudaStream_t stream, std::function<void()> op);

// What tests and the bindings may ask of the simulated devices.
struct DeviceStats {
  bool context;       // a primary context exists on the device
  size_t memory_cap;  // FLOCKML_CUDA_SIM_MEMORY (bytes)
  size_t used;        // bytes in live allocations
  size_t reserved;    // bytes held by the device's pool (used + cached)
  int live_streams;   // streams created and not destroyed
};
int device_count();
DeviceStats device_stats(int device);
// Replaces the fault-injection plan (same syntax as FLOCKML_CUDA_SIM_FAIL, e.g.
// "cudaMallocAsync:7,cudaEventRecord:3": the 7th call from now fails); "" clears it, and any new
// plan releases the calls held by the old one ("ncclCommAbort:1:hold").
void set_faults(const std::string& spec);
// The calls held by the plan now (one name per waiting call).
std::vector<std::string> held_calls();

}  // namespace sim
