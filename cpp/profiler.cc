#include "profiler.h"
#include <chrono>
#include <mutex>

namespace flock::profiler {

std::atomic<bool> g_enabled{false};

namespace {
struct Pending {
  KernelRecord record;
  Resolver resolve;
};
std::mutex g_m;
std::vector<KernelRecord> g_records;
std::vector<Pending> g_pending;
std::atomic<uint64_t> g_generation{0};
}  // namespace

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void record(KernelRecord r) {
  std::lock_guard<std::mutex> lk(g_m);
  g_records.push_back(std::move(r));
}

void record_pending(KernelRecord r, Resolver resolve) {
  std::lock_guard<std::mutex> lk(g_m);
  g_pending.push_back({std::move(r), std::move(resolve)});
}

void start() {
  {
    std::lock_guard<std::mutex> lk(g_m);
    g_records.clear();
    g_pending.clear();
  }
  g_generation.fetch_add(1, std::memory_order_relaxed);
  g_enabled.store(true, std::memory_order_release);
}

void stop() { g_enabled.store(false, std::memory_order_release); }

uint64_t generation() { return g_generation.load(std::memory_order_relaxed); }

std::vector<KernelRecord> drain() {
  std::vector<KernelRecord> out;
  std::vector<Pending> pending;
  {
    std::lock_guard<std::mutex> lk(g_m);
    out.swap(g_records);
    pending.swap(g_pending);
  }
  // Resolved outside the lock: a resolver may wait on the device while streams keep recording.
  for (auto& p : pending)
    if (p.resolve(p.record)) out.push_back(std::move(p.record));
  return out;
}

RangeHooks& range_hooks() {
  static RangeHooks hooks;
  return hooks;
}

}  // namespace flock::profiler
