// The intra-op thread pools: one kernel's work split over the machine's cores. The calling thread
// (a stream worker) takes chunks too, so a pool of N threads uses N cores, not N+1. Each virtual
// CPU device has its own pool of max(1, total / devices) threads, so devices run side by side.
#pragma once
#include <cstdint>
#include <functional>
#include <utility>

namespace flock::cpu {

// Threads of the calling thread's device pool (what one kernel may use); 1 inside a parallel
// region or a SerialScope, where a kernel's parallel_for runs inline.
int num_threads();
// The intra-op threads of all CPU devices together (fl.getNumThreads / setNumThreads).
int total_threads();
void set_num_threads(int n);
// Makes parallel_for on this thread use CPU device `device`'s pool (the stream workers call it).
void set_thread_device(int device);

// While alive, this thread's kernels run serially: num_threads() is 1 and parallel_for calls fn
// once over the whole range, touching no pool (one another thread may hold). A stream runs a small
// task on the thread that queued it under this scope.
class SerialScope {
 public:
  SerialScope();
  ~SerialScope();
  SerialScope(const SerialScope&) = delete;
  SerialScope& operator=(const SerialScope&) = delete;

 private:
  bool prev_;
};

void parallel_for_impl(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

// Runs fn(begin, end) over [0, n) in chunks of at least `grain` items, in parallel when it pays.
// Nested calls run inline on the calling thread. `fn` is passed on by reference (a
// std::function holding a reference_wrapper never allocates), so a kernel's lambda costs no malloc.
template <class F>
void parallel_for(int64_t n, int64_t grain, F&& fn) {
  parallel_for_impl(n, grain, std::function<void(int64_t, int64_t)>(std::ref(fn)));
}

}  // namespace flock::cpu
