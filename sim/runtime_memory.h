// The simulated memory's shared state (sim/runtime_memory.cc, sim/runtime_pool.cc): every device
// and pinned allocation in one interval map, each device's pool accounting, and the access tables.
// One mutex guards it all: memory calls are rare next to launches.
#pragma once
#include <map>
#include "runtime_state.h"

namespace sim::rt {

enum class BlockState { Live, PendingFree, Cached };

struct Block {
  size_t size;   // as requested
  size_t bytes;  // held (rounded up to kAlign)
  int device;    // -1: pinned host memory
  Kind kind;
  BlockState state = BlockState::Live;
  uint64_t free_stream = 0;  // CUstream_st::id of a PendingFree block's free
  uint64_t generation = 0;   // bumped by each free, so a stale free op can tell
};

struct Pool {
  uint64_t release_threshold = 0;  // CUDA's default: give cached memory back at every sync
  size_t used = 0, reserved = 0, used_high = 0, reserved_high = 0;
  size_t malloc_bytes = 0;                 // cudaMalloc memory, outside the pool
  std::multimap<size_t, uintptr_t> spare;  // bytes -> base, for PendingFree and Cached blocks
  bool access_from[kMaxDevices] = {};      // cudaMemPoolSetAccess grants
  bool peer_enabled_to[kMaxDevices] = {};  // cudaDeviceEnablePeerAccess from this device
};

struct Memory {
  std::mutex m;
  std::map<uintptr_t, Block> blocks;  // base -> block
  Pool pools[kMaxDevices];
};

Memory& memory();

size_t round_up(size_t n);
// Host memory for a new block, poisoned if asked; null when the host has none.
void* allocate_bytes(size_t bytes);
void poison(void* p, size_t bytes);
// A block the device's cap has room for (memory().m held); cudaErrorMemoryAllocation otherwise.
cudaError_t commit(int d, size_t bytes, Kind kind, size_t size, void** out);
// Gives cached blocks of device d back until its pool holds at most `keep` (memory().m held).
void trim_locked(int d, size_t keep);
void erase_spare(Pool& p, uintptr_t base, size_t bytes);

}  // namespace sim::rt
