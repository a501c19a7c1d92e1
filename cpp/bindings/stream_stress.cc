// streamGateStress: a diagnostic for tests of the CPU stream's inline gate (cpp/cpu/stream.h).
// Other threads queue tasks on one stream while the calling thread alternates queueing a task and
// trying to run one inline; every task checks that no other task of the stream runs at the same
// time, and an inline one that the calling thread's tasks queued before it have all run. It blocks
// the calling thread until everything has run (tests only: seconds at most).
#include <atomic>
#include <chrono>
#include <future>
#include <thread>
#include <vector>
#include "addon.h"
#include "convert.h"
#include "exports.h"

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

}  // namespace

void register_stream_stress_exports(Napi::Env env, Napi::Object exports) {
  FLOCK_EXPORT("streamGateStress", StreamGateStress);
}

}  // namespace flock::js
