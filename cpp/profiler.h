// The profiler's native side: streams report each task's interval here while profiling is on.
// Off, the only cost on a stream is one relaxed atomic load per task, so a build that never
// profiles runs the same code path as one without a profiler.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace flock::profiler {

// Nanoseconds since the Unix epoch: the clock of every record, of user ranges and of the ring
// backend's completion stamps, so one rank's trace lines up with its collectives and other ranks.
int64_t now_ns();

extern std::atomic<bool> g_enabled;
inline bool enabled() { return g_enabled.load(std::memory_order_relaxed); }

// One task on one stream: queued at `enqueue_ns` by host thread `host_thread`, ran [start_ns, end_ns).
struct KernelRecord {
  const char* op;      // a string literal from the op's front end
  std::string stream;  // "cpu", "cuda:0"
  int64_t enqueue_ns;
  int64_t start_ns;
  int64_t end_ns;
};

// A record whose times are only known later (a CUDA event pair): `resolve` fills them in when the
// profiler drains, on the draining thread, and returns false if the interval could not be read.
using Resolver = std::function<bool(KernelRecord&)>;

void record(KernelRecord r);
void record_pending(KernelRecord r, Resolver resolve);

// Starting clears what an earlier session left; `generation` changes with every start so streams
// can re-anchor per-session state (the CUDA clock base).
void start();
void stop();
uint64_t generation();
// Moves out everything recorded so far, resolving pending records (this may wait for the device).
std::vector<KernelRecord> drain();

// Named ranges on the device timeline (NVTX on CUDA); a no-op until a GPU backend installs them.
struct RangeHooks {
  void (*push)(const char* name) = nullptr;
  void (*pop)() = nullptr;
};
RangeHooks& range_hooks();

}  // namespace flock::profiler
