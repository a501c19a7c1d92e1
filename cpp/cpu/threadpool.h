// The intra-op thread pool: one kernel's work split over the machine's cores. The calling thread
// (a stream worker) takes chunks too, so a pool of N threads uses N cores, not N+1.
#pragma once
#include <cstdint>
#include <functional>

namespace flock::cpu {

int num_threads();
void set_num_threads(int n);

// Runs fn(begin, end) over [0, n) in chunks of at least `grain` items, in parallel when it pays.
// Nested calls run inline on the calling thread.
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

}  // namespace flock::cpu
