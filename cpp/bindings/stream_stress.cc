// Diagnostics for tests of the CPU runtime's concurrency; each blocks the calling thread until it
// is done (tests only: seconds at most).
// - streamGateStress: the CPU stream's inline gate (cpp/cpu/stream.h). Other threads queue tasks on
//   one stream while the calling thread alternates queueing a task and trying to run one inline;
//   every task checks that no other task of the stream runs at the same time, and an inline one
//   that the calling thread's tasks queued before it have all run.
// - poolRegionStress: the intra-op pool's regions (cpp/cpu/threadpool.cc). The calling thread runs
//   parallel regions of 1 to n items, most too short for a sleeping worker to join in time, while
//   other threads keep the cores busy; every item must run exactly once, and only inside its own
//   region (a worker joining late must not run a region that has returned).
#include <atomic>
#include <chrono>
#include <future>
#include <thread>
#include <vector>
#include "addon.h"
#include "convert.h"
#include "../cpu/threadpool.h"

namespace flock::js {
namespace {

struct StressState {
  std::atomic<int> active{0};
  std::atomic<int64_t> overlaps{0}, overtaken{0}, inline_ran{0}, queued_ran{0}, mine_done{0};
  // One task's body: counts a second task running at once as an overlap.
  void body() {
    if (active.fetch_add(1, std::memory_order_acq_rel) != 0) overlaps.fetch_add(1);
    for (volatile int i = 0; i < 64; i = i + 1) {
    }
    active.fetch_sub(1, std::memory_order_acq_rel);
  }
};

Napi::Value StreamGateStress(const Napi::CallbackInfo& info) {
  Args a{info, "streamGateStress"};
  const Device d = a.device(0);
  if (!d.is_cpu()) fail(Code::Arg, "streamGateStress: the inline gate is the CPU stream's, got device ", d.str());
  Stream& s = Addon::of(info.Env()).context.stream(d);
  const int threads = static_cast<int>(a.integer(1, "threads", 0, 16));
  const int64_t tasks = a.integer(2, "tasks", 1, int64_t(1) << 20);
  auto st = std::make_shared<StressState>();
  std::vector<std::thread> others;
  for (int t = 0; t < threads; ++t)
    others.emplace_back([&s, st, tasks] {
      for (int64_t i = 0; i < tasks; ++i) {
        s.enqueue("streamGateStress", [st] {
          st->body();
          st->queued_ran.fetch_add(1);
        });
        // Pauses let the worker drain and park, so the gate opens between bursts.
        if (i % 16 == 15) std::this_thread::sleep_for(std::chrono::microseconds(20));
      }
    });
  for (int64_t i = 0; i < tasks; ++i) {
    s.enqueue("streamGateStress", [st, i] {
      st->body();
      st->mine_done.store(i + 1, std::memory_order_release);
      st->queued_ran.fetch_add(1);
    });
    for (int attempt = 0; attempt < 32; ++attempt) {
      const bool ran = s.run_inline("streamGateStress", [st, want = i + 1] {
        st->body();
        if (st->mine_done.load(std::memory_order_acquire) < want) st->overtaken.fetch_add(1);
        st->inline_ran.fetch_add(1);
      });
      if (ran) break;
      std::this_thread::yield();
    }
  }
  for (auto& t : others) t.join();
  std::promise<void> drained;
  s.enqueue("streamGateStress", [&drained] { drained.set_value(); });
  drained.get_future().wait();
  Napi::Env env = info.Env();
  Napi::Object out = Napi::Object::New(env);
  out.Set("overlaps", Napi::Number::New(env, static_cast<double>(st->overlaps.load())));
  out.Set("overtaken", Napi::Number::New(env, static_cast<double>(st->overtaken.load())));
  out.Set("inlineRan", Napi::Number::New(env, static_cast<double>(st->inline_ran.load())));
  out.Set("queuedRan", Napi::Number::New(env, static_cast<double>(st->queued_ran.load())));
  return out;
}

Napi::Value PoolRegionStress(const Napi::CallbackInfo& info) {
  Args a{info, "poolRegionStress"};
  const int64_t regions = a.integer(0, "regions", 1, int64_t(1) << 22);
  const int64_t n = a.integer(1, "n", 1, int64_t(1) << 16);
  const int busy = static_cast<int>(a.integer(2, "busyThreads", 0, 16));
  std::atomic<bool> stop{false};
  std::vector<std::thread> burners;
  for (int t = 0; t < busy; ++t)
    burners.emplace_back([&stop] {
      while (!stop.load(std::memory_order_relaxed)) {
        for (volatile int i = 0; i < 1000; i = i + 1) {
        }
      }
    });
  std::atomic<int64_t> current{-1}, stale{0};
  int64_t missed = 0, repeated = 0;
  std::vector<std::atomic<int>> count(static_cast<size_t>(n));
  for (int64_t r = 0; r < regions; ++r) {
    const int64_t items = r % 5 == 0 ? n : 1 + r % 7;
    for (int64_t i = 0; i < items; ++i) count[i].store(0, std::memory_order_relaxed);
    current.store(r, std::memory_order_release);
    cpu::parallel_for(items, 1, [&, r](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        if (current.load(std::memory_order_acquire) != r) stale.fetch_add(1);
        count[i].fetch_add(1, std::memory_order_relaxed);
      }
    });
    current.store(-1, std::memory_order_release);
    for (int64_t i = 0; i < items; ++i) {
      const int c = count[i].load(std::memory_order_relaxed);
      missed += c == 0;
      repeated += c > 1;
    }
  }
  stop.store(true);
  for (auto& t : burners) t.join();
  Napi::Env env = info.Env();
  Napi::Object out = Napi::Object::New(env);
  out.Set("missed", Napi::Number::New(env, static_cast<double>(missed)));
  out.Set("repeated", Napi::Number::New(env, static_cast<double>(repeated)));
  out.Set("stale", Napi::Number::New(env, static_cast<double>(stale.load())));
  out.Set("threads", Napi::Number::New(env, cpu::num_threads()));
  return out;
}

}  // namespace

}  // namespace flock::js

#include "../generated/register_stream_stress.inc"
