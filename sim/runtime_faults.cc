// Fault injection: makes chosen calls fail, to run error paths that a healthy GPU never takes.
//
// Syntax (FLOCKML_CUDA_SIM_FAIL, read on the first CUDA call; or sim::set_faults, which replaces
// the plan): a comma-separated list of `name:N`, e.g. "cudaMallocAsync:7,cudaEventRecord:3".
// The Nth call of `name`, counting from when the plan was set (1 = the next call), fails without
// doing its work; a name may appear several times ("cudaMallocAsync:1,cudaMallocAsync:2" fails
// two calls in a row). `name` is a CUDA runtime or driver entry point as spelled in cuda/
// (cudaMalloc, cudaMemPoolSetAccess, cuStreamWaitValue32, ...) or `launch` for kernel launches.
// The error: cudaErrorMemoryAllocation for cudaMalloc/cudaMallocAsync/cudaMallocHost/
// cudaHostAlloc, cudaErrorLaunchFailure for `launch` (reported by cudaGetLastError, not sticky:
// the device stays usable), cudaErrorUnknown (CUDA_ERROR_UNKNOWN) for everything else.
//
// `name:N:hold` holds that call instead: it waits, before doing its work, until the plan is replaced
// (or 60 s have passed), then runs normally. A test uses it to act while another thread is inside
// the call (a real ncclCommAbort can take seconds); held_calls() lists the calls waiting.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include "runtime_state.h"

namespace sim::rt {
namespace {

struct Schedule {
  std::map<std::string, std::set<unsigned long>> fail;  // name -> call numbers that fail
  std::map<std::string, std::set<unsigned long>> hold;  // name -> call numbers that wait
};

struct Plan {
  std::mutex m;
  std::condition_variable replaced;
  Schedule due;
  std::map<std::string, unsigned long> calls;
  std::multiset<std::string> held;  // calls waiting now
  unsigned long generation = 0;     // bumped by every install: releases the held calls
  std::atomic<bool> armed{false};
};

Plan& plan() {
  static Plan* p = new Plan;  // never destroyed: calls may arrive during process exit
  return *p;
}

// Throws std::invalid_argument naming the bad entry.
Schedule parse(const std::string& spec) {
  Schedule due;
  size_t at = 0;
  while (at < spec.size()) {
    size_t comma = spec.find(',', at);
    if (comma == std::string::npos) comma = spec.size();
    const std::string entry = spec.substr(at, comma - at);
    at = comma + 1;
    if (entry.empty()) continue;
    std::string counted = entry;
    const bool hold = counted.size() > 5 && counted.compare(counted.size() - 5, 5, ":hold") == 0;
    if (hold) counted.resize(counted.size() - 5);
    const size_t colon = counted.rfind(':');
    if (colon == std::string::npos || colon == 0) throw std::invalid_argument("fault plan entry '" + entry + "' is not name:N");
    const std::string count = counted.substr(colon + 1);
    char* end = nullptr;
    const unsigned long n = std::strtoul(count.c_str(), &end, 10);
    if (count.empty() || *end != '\0' || n == 0)
      throw std::invalid_argument("fault plan entry '" + entry + "': N must be a positive integer");
    (hold ? due.hold : due.fail)[counted.substr(0, colon)].insert(n);
  }
  return due;
}

void install(Schedule due) {
  Plan& p = plan();
  {
    std::lock_guard<std::mutex> lk(p.m);
    p.armed.store(!due.fail.empty() || !due.hold.empty());
    p.due = std::move(due);
    p.calls.clear();
    ++p.generation;
  }
  p.replaced.notify_all();
}

void load_env_once() {
  static const bool loaded = [] {
    const char* v = std::getenv("FLOCKML_CUDA_SIM_FAIL");
    if (v && *v) {
      try {
        install(parse(v));
      } catch (const std::invalid_argument& e) {
        std::fprintf(stderr, "cuda sim: FLOCKML_CUDA_SIM_FAIL ignored: %s\n", e.what());
      }
    }
    return true;
  }();
  (void)loaded;
}

}  // namespace

bool fault_due(const char* api) {
  load_env_once();
  Plan& p = plan();
  if (!p.armed.load(std::memory_order_relaxed)) return false;
  std::unique_lock<std::mutex> lk(p.m);
  const auto failing = p.due.fail.find(api);
  const auto holding = p.due.hold.find(api);
  if (failing == p.due.fail.end() && holding == p.due.hold.end()) return false;
  const unsigned long n = ++p.calls[api];
  if (holding != p.due.hold.end() && holding->second.count(n)) {
    const unsigned long generation = p.generation;
    const auto it = p.held.insert(api);
    const bool released = p.replaced.wait_for(lk, std::chrono::seconds(60), [&] { return p.generation != generation; });
    p.held.erase(it);
    if (!released) std::fprintf(stderr, "cuda sim: call %lu of %s held for 60 s; going on\n", n, api);
    return false;
  }
  return failing != p.due.fail.end() && failing->second.count(n) != 0;
}

}  // namespace sim::rt

namespace sim {

void set_faults(const std::string& spec) {
  rt::fault_due("");  // an explicit plan replaces the environment's, so load that one first
  rt::install(rt::parse(spec));
}

std::vector<std::string> held_calls() {
  rt::Plan& p = rt::plan();
  std::lock_guard<std::mutex> lk(p.m);
  return {p.held.begin(), p.held.end()};
}

}  // namespace sim
