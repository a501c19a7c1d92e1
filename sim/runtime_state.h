// What the simulated runtime's files (sim/runtime_*.cc) share: devices and their contexts, the
// calling thread's state, streams and their executors, the allocation registry. Internal to the
// runtime; flockml and the engine see only <cuda_runtime.h>, <cuda.h> and sim/sim.h.
//
// Model, in one place:
// - Devices: FLOCKML_CUDA_SIM_DEVICES (default 2, 0 = "no CUDA device"), each with a memory cap
//   FLOCKML_CUDA_SIM_MEMORY (bytes, suffix K/M/G/T, default 4G). FLOCKML_CUDA_SIM_PEER=0 makes
//   cudaDeviceCanAccessPeer answer no. FLOCKML_CUDA_SIM_POISON=1 fills new and freed device
//   memory with 0xFF bytes (NaN in every float dtype).
// - Contexts: as the CUDA 12+ runtime, a device's primary context appears on cudaSetDevice(d) or
//   on the first call that works on the current device (allocations, stream/event creation, the
//   legacy stream, memcpy/memset, launches, cudaMemGetInfo, cudaDeviceSynchronize, mempool
//   lookups). Calls on a handle (stream, event, pool) use the handle's device, which already has
//   one. Device queries, cudaGetDevice, versions and error calls create none.
// - Errors: every failing call records its error as the thread's last error (cudaErrorNotReady
//   is not an error). A kernel fault or an illegal address is sticky: the device answers every
//   later call with it, and cudaGetErrorString adds the fault's message.
// - Streams: an ordered queue of ops and one executor thread each. The legacy stream (nullptr,
//   cudaStreamLegacy; cudaStreamPerThread is treated as legacy) orders after all earlier work of
//   the device's blocking streams, and they after it. Dependencies are (stream, ticket) pairs
//   taken when an op is queued, so they always point at earlier ops and cannot form a cycle.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>
#include "cuda_runtime.h"
#include "sim.h"

namespace sim::rt {

constexpr int kMaxDevices = 64;
constexpr size_t kAlign = 256;  // cudaMalloc's documented minimum alignment

// ---- devices, contexts, errors (runtime_device.cc) ----
struct Device {
  int index = 0;
  size_t cap = 0;
  std::atomic<bool> context{false};
  std::atomic<int> sticky{0};  // a cudaError_t; 0 while the context is healthy
  std::string sticky_message;  // written once, before `sticky` is published
  std::mutex sticky_m;
  std::atomic<int> live_streams{0};
};

int configured_device_count();
bool valid_device(int d);
Device& device(int d);
bool peer_capable(int device, int peer);  // cudaDeviceCanAccessPeer's answer
bool poison_enabled();
void ensure_context(int d);
// The first fault wins; later ones keep the first message, as a dead context reports one cause.
void set_sticky(int d, cudaError_t e, const std::string& message);
cudaError_t sticky_error(int d);

struct ThreadState {
  int current = 0;  // the thread's current device; 0 until cudaSetDevice, as in CUDA
  cudaError_t last = cudaSuccess;
  bool in_host_fn = false;  // inside a cudaLaunchHostFunc callback: CUDA calls are not permitted
};
ThreadState& thread_state();

// Records `e` as the thread's last error (unless success/not-ready) and returns it.
cudaError_t record(cudaError_t e);
// The check every API runs first: not inside a host function, not during process teardown, and
// the fault plan. Returns the (recorded) error to give back, or cudaSuccess.
cudaError_t enter(const char* api);
// Creates the current device's context if needed; returns its sticky error (unrecorded).
cudaError_t current_context();

// ---- fault injection (runtime_faults.cc) ----
// True when this call of `api` is one the plan says must fail (counts the call). A call the plan
// holds waits here until the plan is replaced, then returns false.
bool fault_due(const char* api);

// ---- streams and executors (runtime_stream.cc) ----
struct Dep;
struct Op {
  std::vector<Dep> deps;
  std::function<void()> run;
  bool bookkeeping = false;  // runs on a faulted device too (pool accounting)
};

}  // namespace sim::rt

struct CUstream_st {
  int device = 0;
  unsigned flags = 0;
  bool legacy = false;
  uint64_t id = 0;  // unique for the process; the pool matches stream-ordered frees by it
  std::mutex m;
  std::condition_variable cv;  // queue not empty, op completed, stream destroyed
  std::deque<sim::rt::Op> queue;
  uint64_t enqueued = 0, completed = 0;  // tickets: op n is done when completed >= n
  bool destroyed = false;
  bool executor_started = false;
  bool blocking() const { return !legacy && !(flags & cudaStreamNonBlocking); }
};

namespace sim::rt {

using StreamPtr = std::shared_ptr<CUstream_st>;
struct Dep {
  StreamPtr stream;
  uint64_t ticket;
};

// Resolves a handle (nullptr/legacy: the current device's legacy stream, creating the context).
// Null result: *err says why (cudaErrorInvalidResourceHandle, cudaErrorNoDevice).
StreamPtr resolve_stream(cudaStream_t s, cudaError_t* err);
// Queues `op` with the legacy-stream dependencies; returns its ticket.
uint64_t enqueue(const StreamPtr& s, Op op);
// Waits on the host until the stream has completed `ticket` (or the process is exiting).
void wait_ticket(const StreamPtr& s, uint64_t ticket);
// Everything queued so far on the stream, and for the legacy stream on the blocking streams too.
std::vector<Dep> stream_frontier(const StreamPtr& s);
// Waits until every stream of device d has completed what was queued before the call.
void synchronize_device(int d);
bool shutting_down();
void register_exit_hook();  // idempotent; see runtime_stream.cc

// Wakes cuStreamWaitValue32 waiters (runtime_stream_value.cc).
void notify_value_written();

// ---- memory registry and pools (runtime_memory.cc) ----
enum class Kind { Malloc, Pool, Pinned };
struct AllocInfo {
  uintptr_t base;
  size_t size;  // as requested
  int device;   // -1 for pinned host memory
  Kind kind;
  bool live;  // not freed (pool blocks stay registered while cached)
};
std::optional<AllocInfo> find_alloc(const void* p);
// Whether a kernel or copy on `accessor` may touch this allocation.
bool access_ok(int accessor, const AllocInfo& a);
// Gives a device's pool memory above its release threshold back (called at sync points).
void release_above_threshold(int d);
struct MemoryTotals {
  size_t used, reserved;
};
MemoryTotals memory_totals(int d);

}  // namespace sim::rt
