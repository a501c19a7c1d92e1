// Devices and streams. A stream is an in-order work queue for one device: the CPU's is a worker
// thread, a CUDA device's a cudaStream_t. Ops enqueue and return; sync points wait on a stream.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include "error.h"

namespace flock {

enum class DeviceType : uint8_t { CPU = 0, CUDA = 1 };
constexpr int kNumDeviceTypes = 2;
// Virtual CPU devices: the host appears as cpu:0 ... cpu:N-1 (FLOCKML_CPU_DEVICES=N, default 1),
// each with its own stream and a share of the intra-op threads. 'cpu' is cpu:0 and prints as 'cpu'.
constexpr int kMaxCpuDevices = 16;

struct Device {
  DeviceType type = DeviceType::CPU;
  int index = 0;
  bool operator==(const Device& o) const { return type == o.type && index == o.index; }
  bool operator!=(const Device& o) const { return !(*this == o); }
  bool is_cpu() const { return type == DeviceType::CPU; }
  std::string str() const {
    if (is_cpu()) return index == 0 ? "cpu" : "cpu:" + std::to_string(index);
    return "cuda:" + std::to_string(index);
  }
};

// How many virtual CPU devices this process has. The first call fixes the count (from
// set_cpu_device_count, else FLOCKML_CPU_DEVICES, else 1); ERR_DEVICE for a bad FLOCKML_CPU_DEVICES.
int cpu_device_count();
// Sets the count before it is fixed (it takes precedence over FLOCKML_CPU_DEVICES); ERR_DEVICE once devices are in use or for n
// outside [1, 16].
void set_cpu_device_count(int n);

// Parses "cpu", "cpu:N", "cuda" and "cuda:N"; throws ERR_DEVICE on anything else and on a CPU
// index at or above cpu_device_count().
Device parse_device(const std::string& s);

// Which failure of which stream an error reports (stream_failure.h): acknowledged on the JS
// thread once the error has reached it, after which that stream runs new work again.
struct FailureAck {
  std::shared_ptr<std::atomic<uint64_t>> acked;  // the stream's count of acknowledged failures
  uint64_t id = 0;
  void acknowledge() const {
    uint64_t seen = acked->load(std::memory_order_acquire);
    while (seen < id && !acked->compare_exchange_weak(seen, id, std::memory_order_acq_rel)) {
    }
  }
  bool acknowledged() const { return acked->load(std::memory_order_acquire) >= id; }
};

// An error captured while work ran: it rejects the next sync point with the op's name.
struct StreamError {
  Code code = Code::Internal;
  std::string message;
  std::shared_ptr<const FailureAck> ack;  // set when it reports a stream's failure
  StreamError() = default;
  StreamError(Code c, std::string m, std::shared_ptr<const FailureAck> a = nullptr)
      : code(c), message(std::move(m)), ack(std::move(a)) {}
  void acknowledge() const {
    if (ack) ack->acknowledge();
  }
  // Whether the JS thread has been told (an error of no stream failure counts as told).
  bool acknowledged() const { return !ack || ack->acknowledged(); }
};

// `op: what` for an error a task threw, naming the op once when the kernel's message already does.
inline std::string op_message(const char* op, const char* what) {
  const std::string prefix = std::string(op) + ": ";
  return std::string(what).rfind(prefix, 0) == 0 ? std::string(what) : prefix + what;
}

class Stream {
 public:
  virtual ~Stream() = default;
  // Queues `task`; blocks only while the queue is full. `op` names the work in errors. While the
  // stream is failed (stream_failure.h) a task is dropped instead and the storages made by the op
  // call that queued it are marked failed; a `control` task (sync points, events, collectives)
  // always runs, under current_task_failure().
  virtual void enqueue(const char* op, std::function<void()> task, bool control = false) = 0;
  // enqueue for a task the caller knows to take microseconds and never to block (a kernel on a
  // few thousand elements). A stream may run it at once on the calling thread when nothing is
  // queued or running, with the order, error capture and profiler record of a queued task; the
  // default queues it.
  void enqueue_small(const char* op, std::function<void()> task) {
    if (!run_inline(op, task)) enqueue(op, std::move(task));
  }
  // The inline half of enqueue_small: runs `task` (borrowed) on the calling thread and returns
  // true when the stream may, else returns false and the caller queues it. The default never does.
  virtual bool run_inline(const char* /*op*/, const std::function<void()>& /*task*/) { return false; }
  // How many tasks enqueue_small has run on the calling thread so far (tests and benchmarks).
  virtual uint64_t inline_tasks() { return 0; }
  // Calls `done` (on a stream-owned thread) once everything queued before it has run, passing the
  // stream's failure unless the JS thread had acknowledged it before this call.
  virtual void notify(std::function<void(std::optional<StreamError>)> done) = 0;
  // Blocks until everything queued has run; throws (and acknowledges) the failure, if any.
  void synchronize();
  // The failure a sync point queued now would report, as far as the stream knows it now.
  virtual std::optional<StreamError> failure() = 0;
  // Acknowledges every failure begun so far (the JS thread was told that the step failed).
  virtual void acknowledge_failures() = 0;
  // Calls `ready` once the host may queue more without running far ahead of the device: at once
  // (on the caller's thread) when it may already, else later on a stream-owned thread. Never
  // blocks and leaves captured errors to the next sync point. Each stream defines "far ahead":
  // the CPU's as more than `low_watermark` queued tasks; see the CUDA stream for its rule.
  virtual void when_ready(size_t low_watermark, std::function<void()> ready) = 0;
};

}  // namespace flock
