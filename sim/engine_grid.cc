// A grid's blocks spread over a pool of worker OS threads. The thread that calls run_grid (a
// stream's executor) claims blocks too, so a grid always makes progress even when the pool is
// busy with other streams' grids: concurrent run_grid calls cannot deadlock, they only share.
// W = FLOCKML_CUDA_SIM_WORKERS or the core count; the pool has W - 1 helpers.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <thread>
#include "engine.h"

namespace sim {

int validate_launch(const dim3& grid, const dim3& block, size_t shared_bytes) {
  constexpr int kInvalidConfiguration = 9;
  if (!grid.x || !grid.y || !grid.z || !block.x || !block.y || !block.z) return kInvalidConfiguration;
  if (1ull * block.x * block.y * block.z > 1024 || block.x > 1024 || block.y > 1024 || block.z > 64) return kInvalidConfiguration;
  if (grid.x > 0x7fffffffu || grid.y > 65535 || grid.z > 65535) return kInvalidConfiguration;
  if (shared_bytes > 48 * 1024) return kInvalidConfiguration;
  return 0;
}

namespace {

struct Job {
  const LaunchCfg* cfg;
  const std::function<void()>* body;
  uint64_t blocks;
  uint64_t chunk;  // blocks claimed at once, so tiny blocks do not contend on `next`
  std::atomic<uint64_t> next{0};
  std::atomic<uint64_t> finished{0};
  std::atomic<bool> failed{false};
  std::mutex m;
  std::condition_variable all_done;
  std::exception_ptr error;  // the first block's failure, under m
};

// Claims and runs blocks of `job` until none are left; records the first failure and skips the
// blocks claimed after it (a failed grid's output is undefined anyway).
void work(Job& job) {
  for (;;) {
    const uint64_t first = job.next.fetch_add(job.chunk, std::memory_order_relaxed);
    if (first >= job.blocks) return;
    const uint64_t last = std::min(job.blocks, first + job.chunk);
    for (uint64_t i = first; i < last; ++i) {
      if (job.failed.load(std::memory_order_relaxed)) continue;
      try {
        engine::run_block(*job.cfg, *job.body, i);
      } catch (...) {
        std::lock_guard<std::mutex> lk(job.m);
        if (!job.error) job.error = std::current_exception();
        job.failed.store(true, std::memory_order_relaxed);
      }
    }
    if (job.finished.fetch_add(last - first, std::memory_order_acq_rel) + (last - first) == job.blocks) {
      std::lock_guard<std::mutex> lk(job.m);
      job.all_done.notify_all();
    }
  }
}

class Pool {
 public:
  explicit Pool(unsigned helpers) {
    for (unsigned i = 0; i < helpers; ++i) std::thread([this] { serve(); }).detach();
    helpers_ = helpers;
  }
  unsigned helpers() const { return helpers_; }

  void post(const std::shared_ptr<Job>& job) {
    {
      std::lock_guard<std::mutex> lk(m_);
      jobs_.push_back(job);
    }
    if (job->blocks - 1 >= helpers_)
      cv_.notify_all();
    else
      for (uint64_t i = 1; i < job->blocks; ++i) cv_.notify_one();
  }

 private:
  void serve() {
    std::unique_lock<std::mutex> lk(m_);
    for (;;) {
      cv_.wait(lk, [this] { return !jobs_.empty(); });
      std::shared_ptr<Job> job = jobs_.front();
      if (job->next.load(std::memory_order_relaxed) >= job->blocks) {
        jobs_.pop_front();  // every block claimed; its caller waits for the stragglers itself
        continue;
      }
      lk.unlock();
      work(*job);
      lk.lock();
    }
  }

  std::mutex m_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> jobs_;
  unsigned helpers_ = 0;
};

unsigned worker_count() {
  const char* env = std::getenv("FLOCKML_CUDA_SIM_WORKERS");
  const long n = env ? std::atol(env) : 0;
  if (n >= 1) return static_cast<unsigned>(n);
  const unsigned hw = std::thread::hardware_concurrency();
  return hw ? hw : 1;
}

// Made on first use and never destroyed: helpers sleep on the queue until the process exits.
Pool& pool() {
  static Pool* p = new Pool(worker_count() - 1);
  return *p;
}

// Below this many simulated threads, waking helpers costs more than it saves.
constexpr uint64_t kSpreadThreads = 2048;

}  // namespace

void run_grid(const LaunchCfg& cfg, const std::function<void()>& thread_body) {
  if (validate_launch(cfg.grid, cfg.block, cfg.shared_bytes))
    throw KernelFault(std::string("kernel ") + (cfg.kernel ? cfg.kernel : "?") + ": invalid launch configuration");
  auto job = std::make_shared<Job>();
  job->cfg = &cfg;
  job->body = &thread_body;
  job->blocks = 1ull * cfg.grid.x * cfg.grid.y * cfg.grid.z;
  const uint64_t threads = job->blocks * cfg.block.x * cfg.block.y * cfg.block.z;
  Pool& p = pool();
  const bool spread = p.helpers() > 0 && job->blocks > 1 && threads >= kSpreadThreads;
  job->chunk = spread ? std::clamp<uint64_t>(job->blocks / ((p.helpers() + 1) * 16ull), 1, 64) : job->blocks;
  if (spread) p.post(job);
  work(*job);
  {
    std::unique_lock<std::mutex> lk(job->m);
    job->all_done.wait(lk, [&] { return job->finished.load(std::memory_order_acquire) == job->blocks; });
  }
  if (job->error) std::rethrow_exception(job->error);
}

}  // namespace sim
