// fl.profiler's native surface: switch stream recording on and off, drain the recorded intervals,
// read the profiler's clock, and mark user ranges on the device timeline.
#include "../profiler.h"
#include "addon.h"
#include "convert.h"

namespace flock::js {
namespace {

double to_us(int64_t ns) { return static_cast<double>(ns) / 1000.0; }

Napi::Value ProfilerStart(const Napi::CallbackInfo& info) {
  profiler::start();
  return info.Env().Undefined();
}

Napi::Value ProfilerStop(const Napi::CallbackInfo& info) {
  profiler::stop();
  return info.Env().Undefined();
}

Napi::Value ProfilerEnabled(const Napi::CallbackInfo& info) { return Napi::Boolean::New(info.Env(), profiler::enabled()); }

// Columns rather than one object per record: a step can queue thousands of tasks.
Napi::Value ProfilerDrain(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::vector<profiler::KernelRecord> recs = profiler::drain();
  Napi::Array ops = Napi::Array::New(env, recs.size());
  Napi::Array streams = Napi::Array::New(env, recs.size());
  Napi::Float64Array times = Napi::Float64Array::New(env, recs.size() * 3);
  for (size_t i = 0; i < recs.size(); ++i) {
    ops.Set(static_cast<uint32_t>(i), recs[i].op);
    streams.Set(static_cast<uint32_t>(i), recs[i].stream);
    times[3 * i] = to_us(recs[i].enqueue_ns);
    times[3 * i + 1] = to_us(recs[i].start_ns);
    times[3 * i + 2] = to_us(recs[i].end_ns);
  }
  Napi::Object out = Napi::Object::New(env);
  out.Set("ops", ops);
  out.Set("streams", streams);
  out.Set("times", times);
  return out;
}

Napi::Value ProfilerNow(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), to_us(profiler::now_ns())); }

Napi::Value RangePush(const Napi::CallbackInfo& info) {
  Args a{info, "profiler.range"};
  const std::string name = a.string(0, "name");
  if (auto push = profiler::range_hooks().push) push(name.c_str());
  return info.Env().Undefined();
}

Napi::Value RangePop(const Napi::CallbackInfo& info) {
  if (auto pop = profiler::range_hooks().pop) pop();
  return info.Env().Undefined();
}

}  // namespace

}  // namespace flock::js

#include "../generated/register_profiler.inc"
