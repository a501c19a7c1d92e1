// Device memory (cudaMalloc/cudaFree), pinned host memory, the allocation registry the copy and
// launch checks read, and peer access (cudaDeviceEnablePeerAccess).
#include <cstdlib>
#include <cstring>
#include "runtime_memory.h"

namespace sim::rt {

Memory& memory() {
  static Memory* m = new Memory;  // never destroyed: executors may free during process exit
  return *m;
}

size_t round_up(size_t n) { return n == 0 ? kAlign : (n + kAlign - 1) / kAlign * kAlign; }

void poison(void* p, size_t bytes) {
  if (poison_enabled()) std::memset(p, 0xFF, bytes);
}

void* allocate_bytes(size_t bytes) {
  void* p = std::aligned_alloc(kAlign, bytes);
  if (p) poison(p, bytes);
  return p;
}

cudaError_t commit(int d, size_t bytes, Kind kind, size_t size, void** out) {
  Pool& p = memory().pools[d];
  const size_t held = p.reserved + p.malloc_bytes;
  if (bytes > device(d).cap || held > device(d).cap - bytes) return cudaErrorMemoryAllocation;
  void* mem = allocate_bytes(bytes);
  if (!mem) return cudaErrorMemoryAllocation;
  Block b{size, bytes, d, kind};
  memory().blocks.emplace(reinterpret_cast<uintptr_t>(mem), b);
  if (kind == Kind::Malloc) {
    p.malloc_bytes += bytes;
  } else {
    p.reserved += bytes;
    p.used += bytes;
    if (p.reserved > p.reserved_high) p.reserved_high = p.reserved;
    if (p.used > p.used_high) p.used_high = p.used;
  }
  *out = mem;
  return cudaSuccess;
}

void erase_spare(Pool& p, uintptr_t base, size_t bytes) {
  auto range = p.spare.equal_range(bytes);
  for (auto it = range.first; it != range.second; ++it)
    if (it->second == base) {
      p.spare.erase(it);
      return;
    }
}

void trim_locked(int d, size_t keep) {
  Memory& mem = memory();
  Pool& p = mem.pools[d];
  // Largest first: the fewest blocks that bring the pool under `keep`.
  for (auto it = p.spare.end(); it != p.spare.begin() && p.reserved > keep;) {
    --it;
    auto b = mem.blocks.find(it->second);
    if (b == mem.blocks.end() || b->second.state != BlockState::Cached) continue;
    p.reserved -= b->second.bytes;
    std::free(reinterpret_cast<void*>(b->first));
    mem.blocks.erase(b);
    it = p.spare.erase(it);
  }
}

void release_above_threshold(int d) {
  if (!valid_device(d)) return;
  std::lock_guard<std::mutex> lk(memory().m);
  Pool& p = memory().pools[d];
  if (p.reserved > p.release_threshold) trim_locked(d, p.release_threshold);
}

MemoryTotals memory_totals(int d) {
  std::lock_guard<std::mutex> lk(memory().m);
  const Pool& p = memory().pools[d];
  return {p.used + p.malloc_bytes, p.reserved + p.malloc_bytes};
}

std::optional<AllocInfo> find_alloc(const void* ptr) {
  const auto a = reinterpret_cast<uintptr_t>(ptr);
  std::lock_guard<std::mutex> lk(memory().m);
  auto& blocks = memory().blocks;
  auto it = blocks.upper_bound(a);
  if (it == blocks.begin()) return std::nullopt;
  --it;
  const Block& b = it->second;
  if (a >= it->first + b.bytes) return std::nullopt;
  return AllocInfo{it->first, b.size, b.device, b.kind, b.state == BlockState::Live};
}

bool access_ok(int accessor, const AllocInfo& a) {
  if (a.kind == Kind::Pinned || a.device == accessor) return true;
  std::lock_guard<std::mutex> lk(memory().m);
  const Pool& owner = memory().pools[a.device];
  if (a.kind == Kind::Pool) return owner.access_from[accessor];
  return memory().pools[accessor].peer_enabled_to[a.device];
}

namespace {

cudaError_t host_alloc(const char* api, void** out, size_t size, unsigned flags) {
  if (cudaError_t e = enter(api)) return e;
  const unsigned known = cudaHostAllocPortable | cudaHostAllocMapped | cudaHostAllocWriteCombined;
  if (!out || (flags & ~known)) return record(cudaErrorInvalidValue);
  if (cudaError_t e = current_context()) return record(e);  // pinned memory lives in a context
  *out = nullptr;
  const size_t bytes = round_up(size);
  void* p = std::aligned_alloc(kAlign, bytes);
  if (!p) return record(cudaErrorMemoryAllocation);
  std::lock_guard<std::mutex> lk(memory().m);
  memory().blocks.emplace(reinterpret_cast<uintptr_t>(p), Block{size, bytes, -1, Kind::Pinned});
  *out = p;
  return cudaSuccess;
}

}  // namespace
}  // namespace sim::rt

using namespace sim::rt;

extern "C" {

cudaError_t cudaMalloc(void** out, size_t size) {
  if (cudaError_t e = enter("cudaMalloc")) return e;
  if (!out) return record(cudaErrorInvalidValue);
  if (cudaError_t e = current_context()) return record(e);
  *out = nullptr;
  if (size == 0) return cudaSuccess;
  std::lock_guard<std::mutex> lk(memory().m);
  return record(commit(thread_state().current, round_up(size), Kind::Malloc, size, out));
}

// Synchronous, as in CUDA: waits for the owning device's work before the memory goes.
cudaError_t cudaFree(void* ptr) {
  if (cudaError_t e = enter("cudaFree")) return e;
  if (cudaError_t e = current_context()) return record(e);  // cudaFree(0): the classic context init
  if (!ptr) return cudaSuccess;
  auto a = find_alloc(ptr);
  if (!a || a->base != reinterpret_cast<uintptr_t>(ptr) || a->kind == Kind::Pinned || !a->live)
    return record(cudaErrorInvalidValue);
  synchronize_device(a->device);
  std::lock_guard<std::mutex> lk(memory().m);
  auto it = memory().blocks.find(a->base);
  if (it == memory().blocks.end() || it->second.state != BlockState::Live) return record(cudaErrorInvalidValue);
  Block& b = it->second;
  Pool& p = memory().pools[b.device];
  if (b.kind == Kind::Malloc) {
    p.malloc_bytes -= b.bytes;
    std::free(ptr);
    memory().blocks.erase(it);
  } else {  // pool memory freed with cudaFree: back to the pool's cache, now
    b.state = BlockState::Cached;
    ++b.generation;
    p.used -= b.bytes;
    p.spare.emplace(b.bytes, a->base);
    poison(ptr, b.bytes);
  }
  return cudaSuccess;
}

cudaError_t cudaHostAlloc(void** out, size_t size, unsigned int flags) { return host_alloc("cudaHostAlloc", out, size, flags); }
cudaError_t cudaMallocHost(void** out, size_t size) { return host_alloc("cudaMallocHost", out, size, 0); }

// Does not wait for queued copies that use the memory: freeing it first is the caller's bug.
cudaError_t cudaFreeHost(void* ptr) {
  if (cudaError_t e = enter("cudaFreeHost")) return e;
  if (cudaError_t e = current_context(); e == cudaErrorNoDevice) return record(e);
  if (!ptr) return cudaSuccess;
  std::lock_guard<std::mutex> lk(memory().m);
  auto it = memory().blocks.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == memory().blocks.end() || it->second.kind != Kind::Pinned) return record(cudaErrorInvalidValue);
  memory().blocks.erase(it);
  std::free(ptr);
  return cudaSuccess;
}

// All simulated memory is host memory with one address space, so the device pointer of pinned
// memory is the host pointer, as with unified addressing on a GPU.
cudaError_t cudaHostGetDevicePointer(void** out, void* host, unsigned int flags) {
  if (cudaError_t e = enter("cudaHostGetDevicePointer")) return e;
  if (!out || !host || flags != 0) return record(cudaErrorInvalidValue);
  if (cudaError_t e = current_context()) return record(e);
  auto a = find_alloc(host);
  if (!a || a->kind != Kind::Pinned) return record(cudaErrorInvalidValue);
  *out = host;
  return cudaSuccess;
}

cudaError_t cudaDeviceEnablePeerAccess(int peer, unsigned int flags) {
  if (cudaError_t e = enter("cudaDeviceEnablePeerAccess")) return e;
  if (flags != 0) return record(cudaErrorInvalidValue);
  if (cudaError_t e = current_context()) return record(e);
  const int d = thread_state().current;
  if (!valid_device(peer) || peer == d) return record(cudaErrorInvalidDevice);
  if (!peer_capable(d, peer)) return record(cudaErrorPeerAccessUnsupported);
  std::lock_guard<std::mutex> lk(memory().m);
  bool& on = memory().pools[d].peer_enabled_to[peer];
  if (on) return record(cudaErrorPeerAccessAlreadyEnabled);
  on = true;
  return cudaSuccess;
}

cudaError_t cudaDeviceDisablePeerAccess(int peer) {
  if (cudaError_t e = enter("cudaDeviceDisablePeerAccess")) return e;
  if (cudaError_t e = current_context()) return record(e);
  const int d = thread_state().current;
  if (!valid_device(peer)) return record(cudaErrorInvalidDevice);
  std::lock_guard<std::mutex> lk(memory().m);
  bool& on = memory().pools[d].peer_enabled_to[peer];
  if (!on) return record(cudaErrorPeerAccessNotEnabled);
  on = false;
  return cudaSuccess;
}

}  // extern "C"
