// A Context owns the streams of one addon instance (one per Node.js environment, so each
// worker_thread has its own). Ops find their stream through Context::current().
#pragma once
#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <vector>
#include "device.h"

namespace flock {

using StreamFactory = std::unique_ptr<Stream> (*)(int device_index);
// The CUDA runtime registers how to make a stream for a CUDA device.
void register_stream_factory(DeviceType t, StreamFactory f);

class Context {
 public:
  Context();
  ~Context();
  // The context of the calling JS thread; throws if the addon was not initialised on it.
  static Context& current();
  static void set_current(Context* c);

  Stream& stream(Device d);
  // Synchronises every stream this context has created.
  void synchronize_all();
  // Every stream this context has created so far (cpu:0's always).
  std::vector<Stream*> streams();

  // fl.backends.cuda.allowTF32: f32 matmuls on CUDA may use tf32 tensor cores. Off by default,
  // as in PyTorch, because it keeps only 10 mantissa bits of each operand.
  std::atomic<bool> allow_tf32{false};

 private:
  std::array<std::unique_ptr<Stream>, kMaxCpuDevices> cpu_;  // [0] made with the context, the rest on first use
  std::array<std::unique_ptr<Stream>, 16> cuda_;
  std::mutex m_;
};

}  // namespace flock
