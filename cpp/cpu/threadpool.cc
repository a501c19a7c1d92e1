#include "threadpool.h"
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
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

// How long a pool thread, and a caller waiting for one, stay awake polling before they sleep:
// back-to-back parallel regions (the GEMMs of a layer, the ops of a step) then find the threads
// running instead of paying a futex wake-up each (tens of µs on a VM, a tenth of a 256³ GEMM).
// FLOCKML_CPU_SPIN_US, default 100; 0 sleeps at once.
std::chrono::nanoseconds spin_time() {
  static const std::chrono::nanoseconds t = [] {
    const char* env = std::getenv("FLOCKML_CPU_SPIN_US");
    const long us = env && *env ? std::strtol(env, nullptr, 10) : 100;
    return std::chrono::nanoseconds(std::max(0L, std::min(us, 100000L)) * 1000);
  }();
  return t;
}

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

// Polls `ready` for up to spin_time(); true once it holds.
template <class Ready>
bool spin_until(Ready ready) {
  const auto spin = spin_time();
  if (spin.count() == 0) return ready();
  const auto until = std::chrono::steady_clock::now() + spin;
  for (int i = 0;; ++i) {
    if (ready()) return true;
    if ((i & 63) == 63 && std::chrono::steady_clock::now() >= until) return false;
    cpu_relax();
  }
}

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

  // The caller takes chunks alongside the workers. A worker joins the region before it takes any;
  // once the caller has run out of chunks it closes the region and waits only for the workers that
  // joined. One that was not running yet (a busy core: the JS thread, another stream) finds the
  // region closed and goes back to waiting, instead of holding the caller until it is scheduled.
  void run(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
    grain = std::max<int64_t>(1, grain);
    if (t_in_parallel || threads_ == 1 || n <= grain) {
      fn(0, n);
      return;
    }
    std::lock_guard<std::mutex> job(job_mutex_);  // one parallel region at a time across streams
    int64_t chunks = std::min<int64_t>((n + grain - 1) / grain, threads_ * 4);
    chunk_ = (n + chunks - 1) / chunks;
    n_ = n;
    fn_ = &fn;
    next_.store(0);
    error_ = nullptr;
    {
      std::lock_guard<std::mutex> lk(m_);
      finished_.store(0, std::memory_order_relaxed);
      gate_.store(0, std::memory_order_release);
      generation_.fetch_add(1, std::memory_order_release);
    }
    cv_.notify_all();
    work();
    const int64_t joined = gate_.fetch_or(kClosed, std::memory_order_acq_rel);
    const auto all_done = [&] { return finished_.load(std::memory_order_acquire) == joined; };
    if (!spin_until(all_done)) {
      std::unique_lock<std::mutex> lk(m_);
      done_cv_.wait(lk, all_done);
    }
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

  // Joins the open region (counted in gate_), or finds it closed.
  bool join() {
    int64_t v = gate_.load(std::memory_order_acquire);
    while (!(v & kClosed))
      if (gate_.compare_exchange_weak(v, v + 1, std::memory_order_acq_rel)) return true;
    return false;
  }

  void worker_loop() {
    uint64_t seen = 0;
    for (;;) {
      spin_until(
          [&] { return stopping_.load(std::memory_order_acquire) || generation_.load(std::memory_order_acquire) != seen; });
      {
        std::unique_lock<std::mutex> lk(m_);
        cv_.wait(lk, [&] { return stopping_.load() || generation_.load() != seen; });
        if (stopping_) return;
        seen = generation_.load();
      }
      if (!join()) continue;
      work();
      finished_.fetch_add(1, std::memory_order_acq_rel);
      std::lock_guard<std::mutex> lk(m_);  // the caller checks finished_ under m_: no lost wake-up
      done_cv_.notify_one();
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
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> generation_{0};  // written under m_, polled without it by spinning workers
  // Workers that joined the current region (low bits) and whether the caller has closed it.
  static constexpr int64_t kClosed = int64_t(1) << 62;
  std::atomic<int64_t> gate_{kClosed};
  std::atomic<int64_t> finished_{0};  // joined workers done with the current region
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

int num_threads() { return t_serial || t_in_parallel ? 1 : pool().size(); }

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

void parallel_for_impl(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  if (t_serial) {
    fn(0, n);
    return;
  }
  pool().run(n, grain, fn);
}

}  // namespace flock::cpu
