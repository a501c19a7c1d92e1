// A gate a stream waits at until a 32-bit word in pinned host memory reaches a value: work queued
// on the stream after the wait does not start before the word is written, by another stream
// (on the GPU, in that stream's order) or by the host. Built on the driver's stream memory
// operations (cuStreamWaitValue32 / cuStreamWriteValue32), reached through
// cudaGetDriverEntryPointByVersion so nothing links against libcuda.
#pragma once
#include <cuda_runtime.h>
#include <cstdint>
#include <memory>
#include <string>

namespace flock::cuda {

// Whether this driver offers stream memory operations; *why says what is missing when not.
bool stream_gates_available(std::string* why);

// A ring of words, one per outstanding sequence number: post `seq` waits on word seq % kSlots
// until it holds `seq` (compared cyclically, as the driver does). Each word is only ever written
// with its own post's number, by the stream that finishes the work or by the host that gives up
// on it, so a late write can never move a word back and shut a gate the host has opened.
class StreamGate {
 public:
  explicit StreamGate(int device);  // throws ERR_CUDA when pinned memory or the driver entry points cannot be had
  ~StreamGate();
  StreamGate(const StreamGate&) = delete;
  StreamGate& operator=(const StreamGate&) = delete;

  // At most this many numbers may be outstanding (posted, not yet finished) at once.
  static constexpr uint32_t kSlots = 4096;

  // `s` waits until post `seq` is let through.
  void wait(cudaStream_t s, uint32_t seq) const;
  // `s` lets post `seq` through once the work queued on it before has finished.
  void write(cudaStream_t s, uint32_t seq) const;
  // The host lets post `seq` through now (its work cannot go on; the streams must not hang).
  void open(uint32_t seq);

 private:
  std::shared_ptr<uint32_t> words_;   // pinned, mapped; shared with streams that queued a wait (GateWait)
  uint32_t* device_words_ = nullptr;  // the same words as the device addresses them
};

// A wait a stream task queued at a gate, as the stream that holds the task sees it: whether work
// behind it can finish without the host doing more. Holds the words, so it stays readable after
// the gate's group is gone.
struct GateWait {
  std::shared_ptr<const uint32_t> words;
  uint32_t seq = 0;
  bool shut() const;
};

// Tells the stream whose task is running on this thread that the task queued a gate wait (see
// CudaStream::retain: a full queue must not block the host behind a gate only the host can open).
void note_gate_wait(GateWait w);

}  // namespace flock::cuda
