// The simulated devices: configuration from the environment, primary contexts, properties, peer
// capability, the per-thread last error, sticky faults and the error strings.
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include "runtime_state.h"

namespace sim::rt {
namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return (v && *v) ? v : nullptr;
}

// "4096", "512M", "2G", "1.5G", "64KiB": binary multiples, as memory sizes usually are.
bool parse_bytes(const char* s, size_t* out) {
  char* end = nullptr;
  const double v = std::strtod(s, &end);
  if (end == s || v < 0) return false;
  double mult = 1;
  switch (std::toupper(static_cast<unsigned char>(*end))) {
    case 'K':
      mult = 1024.0;
      ++end;
      break;
    case 'M':
      mult = 1024.0 * 1024;
      ++end;
      break;
    case 'G':
      mult = 1024.0 * 1024 * 1024;
      ++end;
      break;
    case 'T':
      mult = 1024.0 * 1024 * 1024 * 1024;
      ++end;
      break;
    default:
      break;
  }
  if (mult > 1 && (*end == 'i' || *end == 'I')) ++end;
  if (*end == 'B' || *end == 'b') ++end;
  if (*end != '\0') return false;
  *out = static_cast<size_t>(v * mult);
  return true;
}

struct Config {
  int count = 2;
  size_t cap = size_t(4) << 30;
  bool peer = true;
  bool poison = false;
};

const Config& config() {
  static const Config c = [] {
    Config r;
    if (const char* v = env("FLOCKML_CUDA_SIM_DEVICES")) {
      char* end = nullptr;
      const long n = std::strtol(v, &end, 10);
      if (*end == '\0' && n >= 0 && n <= kMaxDevices)
        r.count = static_cast<int>(n);
      else
        std::fprintf(stderr, "cuda sim: FLOCKML_CUDA_SIM_DEVICES=%s is not 0..%d; using %d\n", v, kMaxDevices, r.count);
    }
    if (const char* v = env("FLOCKML_CUDA_SIM_MEMORY")) {
      if (!parse_bytes(v, &r.cap)) std::fprintf(stderr, "cuda sim: FLOCKML_CUDA_SIM_MEMORY=%s is not a size; using 4G\n", v);
    }
    if (const char* v = env("FLOCKML_CUDA_SIM_PEER")) r.peer = std::strcmp(v, "0") != 0;
    if (const char* v = env("FLOCKML_CUDA_SIM_POISON")) r.poison = std::strcmp(v, "0") != 0;
    return r;
  }();
  return c;
}

// Never destroyed: executor threads may still touch devices while the process exits.
Device* devices() {
  static Device* d = [] {
    auto* arr = new Device[kMaxDevices];
    for (int i = 0; i < kMaxDevices; ++i) {
      arr[i].index = i;
      arr[i].cap = config().cap;
    }
    return arr;
  }();
  return d;
}

const char* base_string(cudaError_t e) {
  switch (e) {
    case cudaSuccess:
      return "no error";
    case cudaErrorInvalidValue:
      return "invalid argument";
    case cudaErrorMemoryAllocation:
      return "out of memory";
    case cudaErrorInitializationError:
      return "initialization error";
    case cudaErrorCudartUnloading:
      return "driver shutting down";
    case cudaErrorInvalidConfiguration:
      return "invalid configuration argument";
    case cudaErrorInvalidDevicePointer:
      return "invalid device pointer";
    case cudaErrorInvalidMemcpyDirection:
      return "invalid copy direction for memcpy";
    case cudaErrorInsufficientDriver:
      return "CUDA driver version is insufficient for CUDA runtime version";
    case cudaErrorNoDevice:
      return "no CUDA-capable device is detected";
    case cudaErrorInvalidDevice:
      return "invalid device ordinal";
    case cudaErrorPeerAccessUnsupported:
      return "peer access is not supported between these two devices";
    case cudaErrorInvalidResourceHandle:
      return "invalid resource handle";
    case cudaErrorIllegalState:
      return "the operation cannot be performed in the present state";
    case cudaErrorSymbolNotFound:
      return "named symbol not found";
    case cudaErrorNotReady:
      return "device not ready";
    case cudaErrorIllegalAddress:
      return "an illegal memory access was encountered";
    case cudaErrorLaunchOutOfResources:
      return "too many resources requested for launch";
    case cudaErrorPeerAccessAlreadyEnabled:
      return "peer access is already enabled";
    case cudaErrorPeerAccessNotEnabled:
      return "peer access has not been enabled";
    case cudaErrorLaunchFailure:
      return "unspecified launch failure";
    case cudaErrorNotPermitted:
      return "operation not permitted";
    case cudaErrorNotSupported:
      return "operation not supported";
    case cudaErrorUnknown:
      return "unknown error";
  }
  return nullptr;
}

}  // namespace

int configured_device_count() { return config().count; }
bool valid_device(int d) { return d >= 0 && d < config().count; }
Device& device(int d) { return devices()[d]; }
bool peer_capable(int d, int peer) { return config().peer && d != peer && valid_device(d) && valid_device(peer); }
bool poison_enabled() { return config().poison; }

void ensure_context(int d) { devices()[d].context.store(true, std::memory_order_release); }

void set_sticky(int d, cudaError_t e, const std::string& message) {
  Device& dev = device(d);
  std::lock_guard<std::mutex> lk(dev.sticky_m);
  if (dev.sticky.load() != 0) return;
  dev.sticky_message = std::string(base_string(e)) + " (cuda sim, cuda:" + std::to_string(d) + ": " + message + ")";
  dev.sticky.store(e, std::memory_order_release);
}

cudaError_t sticky_error(int d) { return static_cast<cudaError_t>(device(d).sticky.load(std::memory_order_acquire)); }

ThreadState& thread_state() {
  static thread_local ThreadState t;
  return t;
}

cudaError_t record(cudaError_t e) {
  if (e != cudaSuccess && e != cudaErrorNotReady) thread_state().last = e;
  return e;
}

cudaError_t enter(const char* api) {
  if (thread_state().in_host_fn) return record(cudaErrorNotPermitted);
  if (shutting_down()) return record(cudaErrorCudartUnloading);
  if (fault_due(api)) {
    const bool alloc = !std::strcmp(api, "cudaMalloc") || !std::strcmp(api, "cudaMallocAsync") ||
                       !std::strcmp(api, "cudaMallocHost") || !std::strcmp(api, "cudaHostAlloc");
    const bool launch = !std::strcmp(api, "launch");
    return record(alloc ? cudaErrorMemoryAllocation : launch ? cudaErrorLaunchFailure : cudaErrorUnknown);
  }
  return cudaSuccess;
}

cudaError_t current_context() {
  if (configured_device_count() == 0) return cudaErrorNoDevice;
  const int d = thread_state().current;
  ensure_context(d);
  return sticky_error(d);
}

}  // namespace sim::rt

using namespace sim::rt;

extern "C" {

cudaError_t cudaGetDeviceCount(int* count) {
  if (cudaError_t e = enter("cudaGetDeviceCount")) return e;
  if (!count) return record(cudaErrorInvalidValue);
  *count = configured_device_count();
  return *count == 0 ? record(cudaErrorNoDevice) : cudaSuccess;
}

cudaError_t cudaGetDevice(int* d) {
  if (cudaError_t e = enter("cudaGetDevice")) return e;
  if (!d) return record(cudaErrorInvalidValue);
  if (configured_device_count() == 0) return record(cudaErrorNoDevice);
  *d = thread_state().current;
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int d) {
  if (cudaError_t e = enter("cudaSetDevice")) return e;
  if (configured_device_count() == 0) return record(cudaErrorNoDevice);
  if (!valid_device(d)) return record(cudaErrorInvalidDevice);
  thread_state().current = d;
  ensure_context(d);  // since CUDA 12, cudaSetDevice initialises the primary context
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int d) {
  if (cudaError_t e = enter("cudaGetDeviceProperties")) return e;
  if (!p) return record(cudaErrorInvalidValue);
  if (!valid_device(d)) return record(cudaErrorInvalidDevice);
  std::memset(p, 0, sizeof(*p));
  std::snprintf(p->name, sizeof(p->name), "flockml simulated GPU (sm_90, CPU)");
  p->totalGlobalMem = device(d).cap;
  p->sharedMemPerBlock = 48 * 1024;
  p->sharedMemPerBlockOptin = 48 * 1024;  // the engine enforces 48 KiB: no opt-in
  p->sharedMemPerMultiprocessor = 228 * 1024;
  p->regsPerBlock = p->regsPerMultiprocessor = 65536;
  p->warpSize = 32;
  p->memPitch = SIZE_MAX;
  p->maxThreadsPerBlock = 1024;
  p->maxThreadsDim[0] = 1024;
  p->maxThreadsDim[1] = 1024;
  p->maxThreadsDim[2] = 64;
  p->maxGridSize[0] = 2147483647;
  p->maxGridSize[1] = p->maxGridSize[2] = 65535;
  p->clockRate = 1980000;
  p->totalConstMem = 64 * 1024;
  p->major = 9;
  p->minor = 0;
  p->textureAlignment = 512;
  p->deviceOverlap = 1;
  p->multiProcessorCount = 132;
  p->canMapHostMemory = 1;
  p->concurrentKernels = 1;
  p->pciBusID = d + 1;
  p->asyncEngineCount = 2;
  p->unifiedAddressing = 1;
  p->memoryClockRate = 2619000;
  p->memoryBusWidth = 5120;
  p->l2CacheSize = 50 * 1024 * 1024;
  p->maxThreadsPerMultiProcessor = 2048;
  p->streamPrioritiesSupported = 1;
  p->globalL1CacheSupported = p->localL1CacheSupported = 1;
  p->managedMemory = 1;
  p->concurrentManagedAccess = 1;
  p->cooperativeLaunch = 1;
  p->maxBlocksPerMultiProcessor = 32;
  p->memoryPoolsSupported = 1;
  return cudaSuccess;
}

cudaError_t cudaDeviceCanAccessPeer(int* can, int d, int peer) {
  if (cudaError_t e = enter("cudaDeviceCanAccessPeer")) return e;
  if (!can) return record(cudaErrorInvalidValue);
  if (!valid_device(d) || !valid_device(peer)) return record(cudaErrorInvalidDevice);
  *can = peer_capable(d, peer) ? 1 : 0;
  return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void) {
  if (cudaError_t e = enter("cudaDeviceSynchronize")) return e;
  if (cudaError_t e = current_context()) return record(e);
  const int d = thread_state().current;
  synchronize_device(d);
  release_above_threshold(d);
  return record(sticky_error(d));
}

cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total) {
  if (cudaError_t e = enter("cudaMemGetInfo")) return e;
  if (!free_bytes || !total) return record(cudaErrorInvalidValue);
  if (cudaError_t e = current_context()) return record(e);
  const int d = thread_state().current;
  const size_t held = memory_totals(d).reserved;
  *total = device(d).cap;
  *free_bytes = held < *total ? *total - held : 0;
  return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int* v) {
  if (cudaError_t e = enter("cudaRuntimeGetVersion")) return e;
  if (!v) return record(cudaErrorInvalidValue);
  *v = CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int* v) {
  if (cudaError_t e = enter("cudaDriverGetVersion")) return e;
  if (!v) return record(cudaErrorInvalidValue);
  *v = CUDART_VERSION;
  return cudaSuccess;
}

// A faulted context keeps reporting its fault, as CUDA's sticky errors do: clearing the thread's
// last error cannot revive the device.
cudaError_t cudaGetLastError(void) {
  ThreadState& t = thread_state();
  const cudaError_t e = t.last;
  t.last = cudaSuccess;
  if (e != cudaSuccess) return e;
  if (valid_device(t.current) && device(t.current).context.load()) return sticky_error(t.current);
  return cudaSuccess;
}

cudaError_t cudaPeekAtLastError(void) {
  ThreadState& t = thread_state();
  if (t.last != cudaSuccess) return t.last;
  if (valid_device(t.current) && device(t.current).context.load()) return sticky_error(t.current);
  return cudaSuccess;
}

// For a sticky error the string names the fault (the current device's first, else any device's).
const char* cudaGetErrorString(cudaError_t e) {
  if (e == cudaErrorLaunchFailure || e == cudaErrorIllegalAddress) {
    const int n = configured_device_count();
    const int cur = thread_state().current;
    for (int i = -1; i < n; ++i) {
      const int d = i < 0 ? cur : i;
      if (valid_device(d) && sticky_error(d) == e) return device(d).sticky_message.c_str();
    }
  }
  const char* s = base_string(e);
  return s ? s : "unrecognized error code";
}

const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
#define FLOCK_SIM_NAME(x) \
  case x:                 \
    return #x;
    FLOCK_SIM_NAME(cudaSuccess)
    FLOCK_SIM_NAME(cudaErrorInvalidValue)
    FLOCK_SIM_NAME(cudaErrorMemoryAllocation)
    FLOCK_SIM_NAME(cudaErrorInitializationError)
    FLOCK_SIM_NAME(cudaErrorCudartUnloading)
    FLOCK_SIM_NAME(cudaErrorInvalidConfiguration)
    FLOCK_SIM_NAME(cudaErrorInvalidDevicePointer)
    FLOCK_SIM_NAME(cudaErrorInvalidMemcpyDirection)
    FLOCK_SIM_NAME(cudaErrorInsufficientDriver)
    FLOCK_SIM_NAME(cudaErrorNoDevice)
    FLOCK_SIM_NAME(cudaErrorInvalidDevice)
    FLOCK_SIM_NAME(cudaErrorPeerAccessUnsupported)
    FLOCK_SIM_NAME(cudaErrorInvalidResourceHandle)
    FLOCK_SIM_NAME(cudaErrorIllegalState)
    FLOCK_SIM_NAME(cudaErrorSymbolNotFound)
    FLOCK_SIM_NAME(cudaErrorNotReady)
    FLOCK_SIM_NAME(cudaErrorIllegalAddress)
    FLOCK_SIM_NAME(cudaErrorLaunchOutOfResources)
    FLOCK_SIM_NAME(cudaErrorPeerAccessAlreadyEnabled)
    FLOCK_SIM_NAME(cudaErrorPeerAccessNotEnabled)
    FLOCK_SIM_NAME(cudaErrorLaunchFailure)
    FLOCK_SIM_NAME(cudaErrorNotPermitted)
    FLOCK_SIM_NAME(cudaErrorNotSupported)
    FLOCK_SIM_NAME(cudaErrorUnknown)
#undef FLOCK_SIM_NAME
  }
  return "cudaErrorUnknown";
}

}  // extern "C"

namespace sim {

int device_count() { return configured_device_count(); }

DeviceStats device_stats(int d) {
  DeviceStats s{};
  if (!valid_device(d)) return s;
  Device& dev = device(d);
  const MemoryTotals m = memory_totals(d);
  s.context = dev.context.load();
  s.memory_cap = dev.cap;
  s.used = m.used;
  s.reserved = m.reserved;
  s.live_streams = dev.live_streams.load();
  return s;
}

}  // namespace sim
