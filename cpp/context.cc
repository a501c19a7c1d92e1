#include "context.h"
#include "cpu/stream.h"

namespace flock {
namespace {
thread_local Context* t_current = nullptr;
StreamFactory g_factories[kNumDeviceTypes] = {nullptr, nullptr};
}  // namespace

void register_stream_factory(DeviceType t, StreamFactory f) { g_factories[static_cast<int>(t)] = f; }

Context::Context() : cpu_(std::make_unique<cpu::CpuStream>()) {}

Context::~Context() {
  for (auto& s : cuda_) s.reset();
  cpu_.reset();
}

Context& Context::current() {
  if (!t_current) fail(Code::Internal, "flockml is not initialised on this thread");
  return *t_current;
}

void Context::set_current(Context* c) { t_current = c; }

Stream& Context::stream(Device d) {
  if (d.is_cpu()) return *cpu_;
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
  std::vector<Stream*> out{cpu_.get()};
  std::lock_guard<std::mutex> lk(m_);
  for (auto& s : cuda_)
    if (s) out.push_back(s.get());
  return out;
}

void Context::synchronize_all() {
  cpu_->synchronize();
  for (auto& s : cuda_)
    if (s) s->synchronize();
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
