// A lock for critical sections of a few dozen instructions taken on every op (the CPU allocator's
// free lists): uncontended, one atomic exchange and one store, where a pthread mutex costs a
// function call and a check for waiters each way. A waiter spins briefly, then yields its core.
#pragma once
#include <atomic>
#include <thread>

namespace flock {

class SpinLock {
 public:
  void lock() noexcept {
    for (int i = 0; held_.exchange(true, std::memory_order_acquire); ++i) {
      while (held_.load(std::memory_order_relaxed)) {
        if (++i < 64) {
#if defined(__x86_64__) || defined(__i386__)
          __builtin_ia32_pause();
#endif
        } else {
          std::this_thread::yield();
        }
      }
    }
  }
  void unlock() noexcept { held_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> held_{false};
};

}  // namespace flock
