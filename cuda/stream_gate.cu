// StreamGate: see stream_gate.cuh.
#include "stream_gate.cuh"
#include <cuda.h>
#include "common.cuh"
#include "device_guard.cuh"

namespace flock::cuda {
namespace {

using MemOp = CUresult (*)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);

struct Ops {
  MemOp wait = nullptr, write = nullptr;
  std::string why;
};

const Ops& ops() {
  static const Ops o = [] {
    Ops r;
    void* w = nullptr;
    void* v = nullptr;
    cudaDriverEntryPointQueryResult q1 = cudaDriverEntryPointSuccess, q2 = cudaDriverEntryPointSuccess;
    // Version 12000 selects the driver's current (_v2) stream memory operations.
    const cudaError_t e1 = cudaGetDriverEntryPointByVersion("cuStreamWaitValue32", &w, 12000, cudaEnableDefault, &q1);
    const cudaError_t e2 = cudaGetDriverEntryPointByVersion("cuStreamWriteValue32", &v, 12000, cudaEnableDefault, &q2);
    if (e1 != cudaSuccess || e2 != cudaSuccess) {
      cudaGetLastError();
      r.why = std::string("cudaGetDriverEntryPointByVersion failed: ") + cudaGetErrorString(e1 != cudaSuccess ? e1 : e2);
    } else if (q1 != cudaDriverEntryPointSuccess || q2 != cudaDriverEntryPointSuccess || !w || !v) {
      r.why = "the CUDA driver lacks cuStreamWaitValue32/cuStreamWriteValue32 (stream memory operations)";
    } else {
      r.wait = reinterpret_cast<MemOp>(w);
      r.write = reinterpret_cast<MemOp>(v);
    }
    return r;
  }();
  return o;
}

void check_cu(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) fail(Code::Cuda, what, " failed (CUresult ", static_cast<int>(r), ")");
}

}  // namespace

bool stream_gates_available(std::string* why) {
  const Ops& o = ops();
  if (!o.wait && why) *why = o.why;
  return o.wait != nullptr;
}

StreamGate::StreamGate(int device) {
  std::string why;
  if (!stream_gates_available(&why)) fail(Code::Cuda, why);
  // Pinned memory is allocated through the current device's context: make it the gate's own, so a
  // rank on cuda:3 never creates a context on cuda:0 for its gate.
  DeviceGuard g(device);
  void* p = nullptr;
  check(cudaHostAlloc(&p, sizeof(uint32_t) * kSlots, cudaHostAllocMapped | cudaHostAllocPortable), "cudaHostAlloc");
  words_ = std::shared_ptr<uint32_t>(static_cast<uint32_t*>(p), [](uint32_t* w) {
    if (cudaFreeHost(w) != cudaSuccess) cudaGetLastError();
  });
  void* d = nullptr;
  const cudaError_t e = cudaHostGetDevicePointer(&d, p, 0);
  if (e != cudaSuccess) {
    cudaGetLastError();
    words_.reset();
    fail_cuda("cudaHostGetDevicePointer", e);
  }
  device_words_ = static_cast<uint32_t*>(d);
  for (uint32_t i = 0; i < kSlots; ++i) __atomic_store_n(words_.get() + i, 0u, __ATOMIC_RELEASE);
}

StreamGate::~StreamGate() = default;  // the last holder of the words frees them

void StreamGate::wait(cudaStream_t s, uint32_t seq) const {
  check_cu(ops().wait(s, reinterpret_cast<CUdeviceptr>(device_words_ + seq % kSlots), seq, CU_STREAM_WAIT_VALUE_GEQ),
           "cuStreamWaitValue32");
  note_gate_wait(GateWait{words_, seq});
}

void StreamGate::write(cudaStream_t s, uint32_t seq) const {
  check_cu(ops().write(s, reinterpret_cast<CUdeviceptr>(device_words_ + seq % kSlots), seq, CU_STREAM_WRITE_VALUE_DEFAULT),
           "cuStreamWriteValue32");
}

void StreamGate::open(uint32_t seq) { __atomic_store_n(words_.get() + seq % StreamGate::kSlots, seq, __ATOMIC_RELEASE); }

// Compared cyclically, as the driver's GEQ wait does.
bool GateWait::shut() const {
  if (!words) return false;
  const uint32_t w = __atomic_load_n(words.get() + seq % StreamGate::kSlots, __ATOMIC_ACQUIRE);
  return static_cast<int32_t>(w - seq) < 0;
}

}  // namespace flock::cuda
