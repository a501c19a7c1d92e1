// Stream memory operations (cuStreamWaitValue32/cuStreamWriteValue32) and the driver entry point
// lookup that hands them out. A wait parks its stream's executor until the word satisfies the
// condition; stream writes wake waiters at once, host writes (plain stores) are seen by polling
// with a short backoff.
#include <chrono>
#include <cstring>
#include "cuda.h"
#include "runtime_state.h"

namespace sim::rt {
namespace {

std::mutex g_value_m;
std::condition_variable g_value_cv;
uint64_t g_value_epoch = 0;  // bumped by every stream write

bool satisfied(uint32_t now, uint32_t value, unsigned op) {
  switch (op) {
    case CU_STREAM_WAIT_VALUE_GEQ:
      return static_cast<int32_t>(now - value) >= 0;  // cyclic
    case CU_STREAM_WAIT_VALUE_EQ:
      return now == value;
    case CU_STREAM_WAIT_VALUE_AND:
      return (now & value) != 0;
    case CU_STREAM_WAIT_VALUE_NOR:
      return ~(now | value) != 0;
  }
  return true;
}

CUresult to_cu(cudaError_t e) { return static_cast<CUresult>(e); }  // the codes flockml sees agree

// The common checks; on success *s is the stream and the word is 4-byte device-visible memory.
CUresult prepare(const char* api, CUstream stream, CUdeviceptr addr, StreamPtr* s) {
  if (thread_state().in_host_fn) return CUDA_ERROR_NOT_PERMITTED;
  if (shutting_down()) return CUDA_ERROR_DEINITIALIZED;
  if (fault_due(api)) return CUDA_ERROR_UNKNOWN;
  const void* p = reinterpret_cast<const void*>(addr);
  auto a = find_alloc(p);
  if (!a || addr % 4 != 0 || addr + 4 > a->base + a->size) return CUDA_ERROR_INVALID_VALUE;
  cudaError_t err = cudaSuccess;
  *s = resolve_stream(stream, &err);
  if (!*s) return err == cudaErrorNoDevice ? CUDA_ERROR_NO_DEVICE : CUDA_ERROR_INVALID_HANDLE;
  if (cudaError_t e = sticky_error((*s)->device)) return to_cu(e);
  return CUDA_SUCCESS;
}

}  // namespace

void notify_value_written() {
  {
    std::lock_guard<std::mutex> lk(g_value_m);
    ++g_value_epoch;
  }
  g_value_cv.notify_all();
}

}  // namespace sim::rt

using namespace sim::rt;

extern "C" {

CUresult cuStreamWaitValue32(CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags) {
  const unsigned op = flags & ~unsigned(CU_STREAM_WAIT_VALUE_FLUSH);
  if (op > CU_STREAM_WAIT_VALUE_NOR) return CUDA_ERROR_INVALID_VALUE;
  StreamPtr s;
  if (CUresult r = prepare("cuStreamWaitValue32", stream, addr, &s)) return r;
  auto* word = reinterpret_cast<uint32_t*>(addr);
  const int d = s->device;
  Op o;
  o.run = [word, value, op, d] {
    auto backoff = std::chrono::microseconds(20);
    for (;;) {
      std::unique_lock<std::mutex> lk(g_value_m);
      const uint64_t epoch = g_value_epoch;
      if (satisfied(__atomic_load_n(word, __ATOMIC_ACQUIRE), value, op)) return;
      if (shutting_down() || sticky_error(d) != cudaSuccess) return;
      g_value_cv.wait_for(lk, backoff, [&] { return g_value_epoch != epoch; });
      if (backoff < std::chrono::microseconds(200)) backoff *= 2;
    }
  };
  enqueue(s, std::move(o));
  return CUDA_SUCCESS;
}

CUresult cuStreamWriteValue32(CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags) {
  if (flags & ~unsigned(CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER)) return CUDA_ERROR_INVALID_VALUE;
  StreamPtr s;
  if (CUresult r = prepare("cuStreamWriteValue32", stream, addr, &s)) return r;
  auto* word = reinterpret_cast<uint32_t*>(addr);
  Op o;
  o.run = [word, value] {
    __atomic_store_n(word, value, __ATOMIC_RELEASE);
    notify_value_written();
  };
  enqueue(s, std::move(o));
  return CUDA_SUCCESS;
}

cudaError_t cudaGetDriverEntryPointByVersion(const char* symbol, void** fn, unsigned int version, unsigned long long flags,
                                             cudaDriverEntryPointQueryResult* status) {
  if (cudaError_t e = enter("cudaGetDriverEntryPointByVersion")) return e;
  if (!symbol || !fn) return record(cudaErrorInvalidValue);
  if (flags & ~0x3ull) return record(cudaErrorInvalidValue);
  *fn = nullptr;
  cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
  // The _v2 stream memory operations arrived in CUDA 11.7; flockml asks for 12000.
  if (!std::strcmp(symbol, "cuStreamWaitValue32"))
    *fn = reinterpret_cast<void*>(&cuStreamWaitValue32);
  else if (!std::strcmp(symbol, "cuStreamWriteValue32"))
    *fn = reinterpret_cast<void*>(&cuStreamWriteValue32);
  if (*fn) {
    q = version >= 11070 ? cudaDriverEntryPointSuccess : cudaDriverEntryPointVersionNotSufficent;
    if (q != cudaDriverEntryPointSuccess) *fn = nullptr;
  }
  if (status) *status = q;
  return cudaSuccess;
}

cudaError_t cudaGetDriverEntryPoint(const char* symbol, void** fn, unsigned long long flags,
                                    cudaDriverEntryPointQueryResult* status) {
  return cudaGetDriverEntryPointByVersion(symbol, fn, CUDART_VERSION, flags, status);
}

}  // extern "C"
