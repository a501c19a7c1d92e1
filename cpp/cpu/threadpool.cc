#include "threadpool.h"
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace flock::cpu {
namespace {

thread_local bool t_in_parallel = false;

class Pool {
 public:
  Pool() { resize(static_cast<int>(std::max(1u, std::thread::hardware_concurrency()))); }
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

Pool& pool() {
  static Pool* p = new Pool();  // never destroyed: worker threads may outlive static destruction order
  return *p;
}

}  // namespace

int num_threads() { return pool().size(); }
void set_num_threads(int n) { pool().resize(n); }
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  pool().run(n, grain, fn);
}

}  // namespace flock::cpu
