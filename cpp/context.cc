#include "context.h"
#include "cpu/stream.h"

namespace flock {
namespace {
thread_local Context* t_current = nullptr;
StreamFactory g_factories[kNumDeviceTypes] = {nullptr, nullptr};
}  // namespace

void register_stream_factory(DeviceType t, StreamFactory f) { g_factories[static_cast<int>(t)] = f; }

Context::Context() { cpu_[0] = std::make_unique<cpu::CpuStream>(0); }

Context::~Context() {
  for (auto& s : cuda_) s.reset();
  // Each stream drains before it goes; a wait on an event another stream records ends when that
  // stream runs the record, so the order does not matter.
  for (int i = kMaxCpuDevices - 1; i >= 0; --i) cpu_[i].reset();
}

Context& Context::current() {
  if (!t_current) fail(Code::Internal, "flockml is not initialised on this thread");
  return *t_current;
}

void Context::set_current(Context* c) { t_current = c; }

Stream& Context::stream(Device d) {
  if (d.is_cpu()) {
    if (d.index == 0) return *cpu_[0];
    const int n = cpu_device_count();
    if (d.index < 0 || d.index >= n)
      fail(Code::Device, "device ", d.str(), " is out of range: this process has ", n, " CPU devices");
    std::lock_guard<std::mutex> lk(m_);
    auto& s = cpu_[d.index];
    if (!s) s = std::make_unique<cpu::CpuStream>(d.index);
    return *s;
  }
  if (d.index < 0 || d.index >= static_cast<int>(cuda_.size())) fail(Code::Device, "device ", d.str(), " is out of range");
  std::lock_guard<std::mutex> lk(m_);
  auto& s = cuda_[d.index];
  if (!s) {
    StreamFactory f = g_factories[static_cast<int>(DeviceType::CUDA)];
    if (!f) fail(Code::Device, "device ", d.str(), " is not available: flockml was built without CUDA");
    s = f(d.index);
  }
  return *s;
}

std::vector<Stream*> Context::streams() {
  std::vector<Stream*> out{cpu_[0].get()};
  std::lock_guard<std::mutex> lk(m_);
  for (int i = 1; i < kMaxCpuDevices; ++i)
    if (cpu_[i]) out.push_back(cpu_[i].get());
  for (auto& s : cuda_)
    if (s) out.push_back(s.get());
  return out;
}

void Context::synchronize_all() {
  for (Stream* s : streams()) s->synchronize();
}

}  // namespace flock

#include "gpu_runtime.h"
namespace flock {
GpuRuntime& gpu_runtime() {
  static GpuRuntime rt;
  return rt;
}
int gpu_device_count() {
  try {
    return gpu_runtime().device_count ? gpu_runtime().device_count() : 0;
  } catch (...) {
    return 0;
  }
}
}  // namespace flock
