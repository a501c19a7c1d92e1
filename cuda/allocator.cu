// The stream-ordered allocator of CUDA tensors: each device's default memory pool, configured on
// first use (release threshold, and read/write access for every peer device that can reach it, so
// NCCL's direct-pointer P2P transport can use a peer's buffers). On OOM the pool is trimmed and
// the allocation retried, then the device's queued frees are waited for and it is retried again;
// emptyCache() gives the pool's unused memory back to the driver.
#include <cuda_runtime.h>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <string>
#include "common.cuh"
#include "device.cuh"
#include "device_guard.cuh"

namespace flock::cuda {
namespace {

uint64_t release_threshold() {
  const char* env = std::getenv("FLOCKML_CUDA_RELEASE_THRESHOLD");
  if (!env || !*env) return UINT64_MAX;  // keep freed memory pooled, as a caching allocator does
  char* end = nullptr;
  const unsigned long long v = std::strtoull(env, &end, 10);
  return (end && *end == '\0') ? static_cast<uint64_t>(v) : UINT64_MAX;
}

// FLOCKML_CUDA_POISON=1 (read once, when the addon loads): every new allocation is filled with
// 0xFF bytes in stream order, a NaN in every float dtype, so a kernel that leaves part of its
// output unwritten shows up in the GPU conformance tests instead of passing on leftover values.
bool poison_from_env() {
  const char* env = std::getenv("FLOCKML_CUDA_POISON");
  return env && *env && std::string(env) != "0";
}

struct CudaAllocator final : Allocator {
  std::mutex m;
  bool configured[kMaxCudaDevices] = {};
  const bool poison = poison_from_env();

  static cudaMemPool_t pool_of(int device) {
    cudaMemPool_t pool = nullptr;
    check(cudaDeviceGetDefaultMemPool(&pool, device), "cudaDeviceGetDefaultMemPool");
    return pool;
  }

  void configure(int device) {
    std::lock_guard<std::mutex> lk(m);
    if (configured[device]) return;
    cudaMemPool_t pool = pool_of(device);
    uint64_t threshold = release_threshold();
    check(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold), "cudaMemPoolSetAttribute");
    // Pool memory is only accessible from its own device unless granted: without this a peer's
    // kernel (NCCL's P2P transport in direct-pointer mode, NCCL ≤ 2.23) faults on our buffers.
    const int n = known_device_count();
    for (int peer = 0; peer < n && peer < kMaxCudaDevices; ++peer) {
      if (peer == device) continue;
      int can = 0;
      if (cudaDeviceCanAccessPeer(&can, peer, device) != cudaSuccess) {
        cudaGetLastError();  // not fatal: that peer simply gets no access
        continue;
      }
      if (!can) continue;
      cudaMemAccessDesc desc{};
      desc.location.type = cudaMemLocationTypeDevice;
      desc.location.id = peer;
      desc.flags = cudaMemAccessFlagsProtReadWrite;
      // A peer that cannot be granted access is a peer without access (as when it cannot access
      // peers at all): transfers to it stage through its own memory. The device stays usable.
      if (cudaMemPoolSetAccess(pool, &desc, 1) != cudaSuccess) cudaGetLastError();
    }
    configured[device] = true;
  }

  // Bytes the pool holds from the driver; 0 when it cannot be read.
  static uint64_t reserved(cudaMemPool_t pool) {
    uint64_t v = 0;
    if (cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &v) != cudaSuccess) {
      cudaGetLastError();
      return 0;
    }
    return v;
  }

  // Gives the pool's unused memory back to the driver; returns how much went back. Memory whose
  // stream-ordered free has not yet been reached by its stream stays in use until it is.
  static size_t trim(int device) noexcept {
    cudaMemPool_t pool = nullptr;
    if (cudaDeviceGetDefaultMemPool(&pool, device) != cudaSuccess) {
      cudaGetLastError();
      return 0;
    }
    const uint64_t before = reserved(pool);
    if (cudaMemPoolTrimTo(pool, 0) != cudaSuccess) {
      cudaGetLastError();
      return 0;
    }
    const uint64_t after = reserved(pool);
    return before > after ? static_cast<size_t>(before - after) : 0;
  }

  void* allocate(size_t bytes, int device) override {
    check_device(device);
    cudaStream_t s = stream_for(device);
    DeviceGuard g(device);
    configure(device);
    void* p = nullptr;
    cudaError_t e = cudaMallocAsync(&p, bytes, s);
    // Out of memory: first give back what the pool keeps cached (other pools and non-pool
    // allocations, NCCL's buffers and pinned staging, may hold the rest) and retry; then wait for
    // the device's queued work, drop this thread's finished closures (the storages a stream keeps
    // until its work is done are otherwise freed only at its next enqueue or sync), and retry once
    // more. Memory whose stream-ordered free another stream has queued but not yet reached is
    // neither reusable by this stream nor trimmable until it is (PyTorch's caching allocator
    // synchronizes the same way before it reports OOM).
    for (int attempt = 0; attempt < 2 && e == cudaErrorMemoryAllocation; ++attempt) {
      cudaGetLastError();
      if (attempt == 1) {
        if (cudaDeviceSynchronize() != cudaSuccess) cudaGetLastError();
        release_finished_work(device);
      }
      trim(device);
      e = cudaMallocAsync(&p, bytes, s);
    }
    if (e == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      return nullptr;  // Storage turns this into ERR_OOM
    }
    check(e, "cudaMallocAsync");
    if (poison && bytes > 0) {
      e = cudaMemsetAsync(p, 0xFF, bytes, s);
      if (e != cudaSuccess) {
        cudaGetLastError();
        cudaFreeAsync(p, s);
        fail_cuda("cudaMemsetAsync (FLOCKML_CUDA_POISON)", e);
      }
    }
    return p;
  }

  void release(void* p, size_t, int device) noexcept override {
    try {
      cudaStream_t s = stream_for(device);
      DeviceGuard g(device);
      if (cudaFreeAsync(p, s) != cudaSuccess) cudaGetLastError();
    } catch (...) {
      // a failed free during a device fault has nobody to report to
    }
  }

  // Whether this process has allocated on `device`: queries of a pool never used would create a
  // CUDA context on the device just to report zero.
  bool used(int device) {
    if (device < 0 || device >= known_device_count() || device >= kMaxCudaDevices) return false;
    std::lock_guard<std::mutex> lk(m);
    return configured[device];
  }

  size_t cached_bytes(int device) override {
    if (!used(device)) return 0;
    // Pool queries run on the pool's own device: on the caller's current one they could create a
    // context there (on GPU 0 from a thread that never chose a device).
    DeviceGuard g(device);
    cudaMemPool_t pool = nullptr;
    if (cudaDeviceGetDefaultMemPool(&pool, device) != cudaSuccess) {
      cudaGetLastError();
      return 0;
    }
    uint64_t used = 0;
    if (cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used) != cudaSuccess) {
      cudaGetLastError();
      return 0;
    }
    const uint64_t held = reserved(pool);
    return held > used ? static_cast<size_t>(held - used) : 0;
  }

  size_t empty_cache(int device) noexcept override {
    try {
      if (!used(device)) return 0;
      DeviceGuard g(device);  // as in cached_bytes
      return trim(device);
    } catch (...) {
      return 0;  // a mutex that cannot be taken, or the device cannot be made current: nothing to give back
    }
  }
};

CudaAllocator g_allocator;

const bool registered = [] {
  register_allocator(DeviceType::CUDA, &g_allocator);
  return true;
}();

}  // namespace
}  // namespace flock::cuda
