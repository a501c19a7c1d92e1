#include "threadpool.h"
#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>
#include "../device.h"

namespace flock::cpu {
namespace {

thread_local bool t_in_parallel = false;
thread_local int t_device = 0;
thread_local bool t_serial = false;  // inside a SerialScope

class Pool {
 public:
  explicit Pool(int n) { resize(n); }
  ~Pool() { stop_workers(); }

  int size() const { return threads_; }

  void resize(int n) {
    std::lock_guard<std::mutex> job(job_mutex_);
    stop_workers();
    threads_ = std::max(1, n);
    stopping_ = false;
    for (int i = 1; i < threads_; ++i) workers_.emplace_back([this] { worker_loop(); });
  }

  void run(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
    grain = std::max<int64_t>(1, grain);
    if (t_in_parallel || threads_ == 1 || n <= grain) { fn(0, n); return; }
    std::lock_guard<std::mutex> job(job_mutex_);  // one parallel region at a time across streams
    int64_t chunks = std::min<int64_t>((n + grain - 1) / grain, threads_ * 4);
    chunk_ = (n + chunks - 1) / chunks;
    n_ = n;
    fn_ = &fn;
    next_.store(0);
    error_ = nullptr;
    {
      std::lock_guard<std::mutex> lk(m_);
      pending_ = threads_ - 1;
      ++generation_;
    }
    cv_.notify_all();
    work();
    std::unique_lock<std::mutex> lk(m_);
    done_cv_.wait(lk, [&] { return pending_ == 0; });
    fn_ = nullptr;
    if (error_) std::rethrow_exception(error_);
  }

 private:
  void work() {
    bool prev = t_in_parallel;
    t_in_parallel = true;
    for (;;) {
      int64_t begin = next_.fetch_add(chunk_);
      if (begin >= n_) break;
      try {
        (*fn_)(begin, std::min(n_, begin + chunk_));
      } catch (...) {
        std::lock_guard<std::mutex> lk(m_);
        if (!error_) error_ = std::current_exception();
      }
    }
    t_in_parallel = prev;
  }

  void worker_loop() {
    uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> lk(m_);
        cv_.wait(lk, [&] { return stopping_ || generation_ != seen; });
        if (stopping_) return;
        seen = generation_;
      }
      work();
      std::lock_guard<std::mutex> lk(m_);
      if (--pending_ == 0) done_cv_.notify_one();
    }
  }

  void stop_workers() {
    {
      std::lock_guard<std::mutex> lk(m_);
      stopping_ = true;
    }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
    workers_.clear();
  }

  std::mutex job_mutex_, m_;
  std::condition_variable cv_, done_cv_;
  std::vector<std::thread> workers_;
  int threads_ = 1;
  bool stopping_ = false;
  uint64_t generation_ = 0;
  int pending_ = 0;
  int64_t n_ = 0, chunk_ = 1;
  std::atomic<int64_t> next_{0};
  const std::function<void(int64_t, int64_t)>* fn_ = nullptr;
  std::exception_ptr error_;
};

// Pools are never destroyed: worker threads may outlive static destruction order.
std::mutex g_pools_mutex;
std::array<std::atomic<Pool*>, kMaxCpuDevices> g_pools{};
int g_total = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));

// A kernel thread must not fail on the device count: a bad FLOCKML_CPU_DEVICES (which lib/device.ts
// refuses at import) is reported where devices are named, and here counts as one device.
int share_locked() {
  int devices = 1;
  try {
    devices = cpu_device_count();
  } catch (const Error&) {
  }
  return std::max(1, g_total / devices);
}

Pool& pool() {
  const int d = t_device;
  if (Pool* p = g_pools[d].load(std::memory_order_acquire)) return *p;
  std::lock_guard<std::mutex> lk(g_pools_mutex);
  if (Pool* p = g_pools[d].load(std::memory_order_relaxed)) return *p;
  auto* p = new Pool(share_locked());
  g_pools[d].store(p, std::memory_order_release);
  return *p;
}

}  // namespace

int num_threads() { return t_serial ? 1 : pool().size(); }

int total_threads() {
  std::lock_guard<std::mutex> lk(g_pools_mutex);
  return g_total;
}

void set_num_threads(int n) {
  std::lock_guard<std::mutex> lk(g_pools_mutex);
  g_total = std::max(1, n);
  for (auto& slot : g_pools)
    if (Pool* p = slot.load(std::memory_order_relaxed)) p->resize(share_locked());
}

void set_thread_device(int device) { t_device = device >= 0 && device < kMaxCpuDevices ? device : 0; }

SerialScope::SerialScope() : prev_(t_serial) { t_serial = true; }
SerialScope::~SerialScope() { t_serial = prev_; }

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  if (t_serial) {
    fn(0, n);
    return;
  }
  pool().run(n, grain, fn);
}

}  // namespace flock::cpu
