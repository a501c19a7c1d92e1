// Each device's default memory pool and the stream-ordered allocator on it. A block freed with
// cudaFreeAsync is reusable at once by allocations on the same stream (they come after the free
// in stream order) and by other streams only once the free has executed. Freed memory stays
// reserved (counted against the device's cap) until a trim or a sync point above the release
// threshold gives it back; an allocation that does not fit fails with cudaErrorMemoryAllocation
// without waiting for queued frees, so the caller's own OOM handling is what gets tested.
#include <cstdlib>
#include "runtime_memory.h"

struct CUmemPoolHandle_st {
  int device;
};

namespace sim::rt {
namespace {

CUmemPoolHandle_st* pool_handles() {
  static CUmemPoolHandle_st* h = [] {
    auto* a = new CUmemPoolHandle_st[kMaxDevices];
    for (int i = 0; i < kMaxDevices; ++i) a[i].device = i;
    return a;
  }();
  return h;
}

// The pool's device, or -1 for a handle that is not a default pool.
int pool_device(cudaMemPool_t pool) {
  const CUmemPoolHandle_st* base = pool_handles();
  if (pool < base || pool >= base + configured_device_count()) return -1;
  return pool->device;
}

// A spare block for `bytes` on stream `sid` (memory().m held): cached, or freed on that same
// stream and not yet executed. Up to twice the size, so small requests do not pin big blocks.
uintptr_t take_spare(int d, size_t bytes, uint64_t sid) {
  Memory& mem = memory();
  Pool& p = mem.pools[d];
  for (auto it = p.spare.lower_bound(bytes); it != p.spare.end() && it->first <= 2 * bytes; ++it) {
    Block& b = mem.blocks.at(it->second);
    const bool ordered = b.state == BlockState::PendingFree && b.free_stream == sid;
    if (b.state != BlockState::Cached && !ordered) continue;
    const uintptr_t base = it->second;
    p.spare.erase(it);
    if (b.state == BlockState::Cached) {
      p.used += b.bytes;
      if (p.used > p.used_high) p.used_high = p.used;
    }
    b.state = BlockState::Live;
    ++b.generation;  // the pending free op, if any, must not touch the new allocation
    return base;
  }
  return 0;
}

}  // namespace
}  // namespace sim::rt

using namespace sim::rt;

extern "C" {

cudaError_t cudaMallocAsync(void** out, size_t size, cudaStream_t stream) {
  if (cudaError_t e = enter("cudaMallocAsync")) return e;
  if (!out) return record(cudaErrorInvalidValue);
  cudaError_t err = cudaSuccess;
  StreamPtr s = resolve_stream(stream, &err);
  if (!s) return record(err);
  if (cudaError_t e = sticky_error(s->device)) return record(e);
  *out = nullptr;
  const size_t bytes = round_up(size);
  std::lock_guard<std::mutex> lk(memory().m);
  if (uintptr_t base = take_spare(s->device, bytes, s->id)) {
    memory().blocks.at(base).size = size;
    *out = reinterpret_cast<void*>(base);
    return cudaSuccess;
  }
  return record(commit(s->device, bytes, Kind::Pool, size, out));
}

cudaError_t cudaFreeAsync(void* ptr, cudaStream_t stream) {
  if (cudaError_t e = enter("cudaFreeAsync")) return e;
  cudaError_t err = cudaSuccess;
  StreamPtr s = resolve_stream(stream, &err);
  if (!s) return record(err);
  if (!ptr) return cudaSuccess;
  const auto base = reinterpret_cast<uintptr_t>(ptr);
  uint64_t generation;
  {
    std::lock_guard<std::mutex> lk(memory().m);
    auto it = memory().blocks.find(base);
    if (it == memory().blocks.end() || it->second.kind != Kind::Pool || it->second.state != BlockState::Live)
      return record(cudaErrorInvalidValue);  // not pool memory, or freed already
    Block& b = it->second;
    b.state = BlockState::PendingFree;
    b.free_stream = s->id;
    generation = ++b.generation;
    memory().pools[b.device].spare.emplace(b.bytes, base);
  }
  Op op;
  op.bookkeeping = true;
  op.run = [base, generation] {
    std::lock_guard<std::mutex> lk(memory().m);
    auto it = memory().blocks.find(base);
    if (it == memory().blocks.end() || it->second.generation != generation) return;  // reused on this stream
    Block& b = it->second;
    b.state = BlockState::Cached;
    memory().pools[b.device].used -= b.bytes;
    poison(reinterpret_cast<void*>(base), b.bytes);
  };
  enqueue(s, std::move(op));
  return cudaSuccess;
}

cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t* pool, int d) {
  if (cudaError_t e = enter("cudaDeviceGetDefaultMemPool")) return e;
  if (!pool) return record(cudaErrorInvalidValue);
  if (!valid_device(d)) return record(cudaErrorInvalidDevice);
  if (cudaError_t e = current_context(); e == cudaErrorNoDevice) return record(e);
  *pool = &pool_handles()[d];
  return cudaSuccess;
}

cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t pool, cudaMemPoolAttr attr, void* value) {
  if (cudaError_t e = enter("cudaMemPoolSetAttribute")) return e;
  const int d = pool_device(pool);
  if (d < 0 || !value) return record(cudaErrorInvalidValue);
  std::lock_guard<std::mutex> lk(memory().m);
  Pool& p = memory().pools[d];
  switch (attr) {
    case cudaMemPoolAttrReleaseThreshold:
      p.release_threshold = *static_cast<uint64_t*>(value);
      return cudaSuccess;
    case cudaMemPoolReuseFollowEventDependencies:
    case cudaMemPoolReuseAllowOpportunistic:
    case cudaMemPoolReuseAllowInternalDependencies:
      return cudaSuccess;  // accepted; the simulated pool reuses only as described above
    case cudaMemPoolAttrReservedMemHigh:
    case cudaMemPoolAttrUsedMemHigh:
      if (*static_cast<uint64_t*>(value) != 0) return record(cudaErrorInvalidValue);  // may only be reset
      if (attr == cudaMemPoolAttrReservedMemHigh)
        p.reserved_high = p.reserved;
      else
        p.used_high = p.used;
      return cudaSuccess;
    default:
      return record(cudaErrorInvalidValue);
  }
}

cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t pool, cudaMemPoolAttr attr, void* value) {
  if (cudaError_t e = enter("cudaMemPoolGetAttribute")) return e;
  const int d = pool_device(pool);
  if (d < 0 || !value) return record(cudaErrorInvalidValue);
  std::lock_guard<std::mutex> lk(memory().m);
  const Pool& p = memory().pools[d];
  uint64_t v;
  switch (attr) {
    case cudaMemPoolReuseFollowEventDependencies:
    case cudaMemPoolReuseAllowOpportunistic:
    case cudaMemPoolReuseAllowInternalDependencies:
      *static_cast<int*>(value) = 1;
      return cudaSuccess;
    case cudaMemPoolAttrReleaseThreshold:
      v = p.release_threshold;
      break;
    case cudaMemPoolAttrReservedMemCurrent:
      v = p.reserved;
      break;
    case cudaMemPoolAttrReservedMemHigh:
      v = p.reserved_high;
      break;
    case cudaMemPoolAttrUsedMemCurrent:
      v = p.used;
      break;
    case cudaMemPoolAttrUsedMemHigh:
      v = p.used_high;
      break;
    default:
      return record(cudaErrorInvalidValue);
  }
  *static_cast<uint64_t*>(value) = v;
  return cudaSuccess;
}

// Frees cached blocks only: a block whose cudaFreeAsync its stream has not reached is in use.
cudaError_t cudaMemPoolTrimTo(cudaMemPool_t pool, size_t keep) {
  if (cudaError_t e = enter("cudaMemPoolTrimTo")) return e;
  const int d = pool_device(pool);
  if (d < 0) return record(cudaErrorInvalidValue);
  std::lock_guard<std::mutex> lk(memory().m);
  trim_locked(d, keep);
  return cudaSuccess;
}

cudaError_t cudaMemPoolSetAccess(cudaMemPool_t pool, const cudaMemAccessDesc* descs, size_t count) {
  if (cudaError_t e = enter("cudaMemPoolSetAccess")) return e;
  const int d = pool_device(pool);
  if (d < 0 || (count > 0 && !descs)) return record(cudaErrorInvalidValue);
  for (size_t i = 0; i < count; ++i) {  // validate all before changing any
    const cudaMemAccessDesc& a = descs[i];
    if (a.location.type != cudaMemLocationTypeDevice) return record(cudaErrorInvalidValue);
    if (!valid_device(a.location.id)) return record(cudaErrorInvalidDevice);
    const bool owner = a.location.id == d;
    if (owner && a.flags != cudaMemAccessFlagsProtReadWrite) return record(cudaErrorInvalidValue);
    if (!owner && a.flags != cudaMemAccessFlagsProtNone && !peer_capable(a.location.id, d)) return record(cudaErrorInvalidDevice);
    if (a.flags != cudaMemAccessFlagsProtNone && a.flags != cudaMemAccessFlagsProtRead &&
        a.flags != cudaMemAccessFlagsProtReadWrite)
      return record(cudaErrorInvalidValue);
  }
  std::lock_guard<std::mutex> lk(memory().m);
  for (size_t i = 0; i < count; ++i)
    if (descs[i].location.id != d)
      memory().pools[d].access_from[descs[i].location.id] = descs[i].flags != cudaMemAccessFlagsProtNone;
  return cudaSuccess;
}

}  // extern "C"
