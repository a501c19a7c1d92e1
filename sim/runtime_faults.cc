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
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include "runtime_state.h"

namespace sim::rt {
namespace {

struct Plan {
  std::mutex m;
  std::map<std::string, std::set<unsigned long>> due;  // name -> call numbers that fail
  std::map<std::string, unsigned long> calls;
  std::atomic<bool> armed{false};
};

Plan& plan() {
  static Plan* p = new Plan;  // never destroyed: calls may arrive during process exit
  return *p;
}

// Throws std::invalid_argument naming the bad entry.
std::map<std::string, std::set<unsigned long>> parse(const std::string& spec) {
  std::map<std::string, std::set<unsigned long>> due;
  size_t at = 0;
  while (at < spec.size()) {
    size_t comma = spec.find(',', at);
    if (comma == std::string::npos) comma = spec.size();
    const std::string entry = spec.substr(at, comma - at);
    at = comma + 1;
    if (entry.empty()) continue;
    const size_t colon = entry.rfind(':');
    if (colon == std::string::npos || colon == 0)
      throw std::invalid_argument("fault plan entry '" + entry + "' is not name:N");
    const std::string count = entry.substr(colon + 1);
    char* end = nullptr;
    const unsigned long n = std::strtoul(count.c_str(), &end, 10);
    if (count.empty() || *end != '\0' || n == 0)
      throw std::invalid_argument("fault plan entry '" + entry + "': N must be a positive integer");
    due[entry.substr(0, colon)].insert(n);
  }
  return due;
}

void install(std::map<std::string, std::set<unsigned long>> due) {
  Plan& p = plan();
  std::lock_guard<std::mutex> lk(p.m);
  p.armed.store(!due.empty());
  p.due = std::move(due);
  p.calls.clear();
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
  std::lock_guard<std::mutex> lk(p.m);
  auto it = p.due.find(api);
  if (it == p.due.end()) return false;
  const unsigned long n = ++p.calls[api];
  return it->second.count(n) != 0;
}

}  // namespace sim::rt

namespace sim {

void set_faults(const std::string& spec) {
  rt::fault_due("");  // an explicit plan replaces the environment's, so load that one first
  rt::install(rt::parse(spec));
}

}  // namespace sim
