// The shared-memory calls that need <fcntl.h>, whose global `struct flock` collides with our
// namespace: this header and its .cc stay outside namespace flock and include none of ours.
#pragma once
#include <cstddef>

namespace flock_sys {

// shm_open(name) read-write: created exclusively (mode 0600) with `create`, else an existing one.
// The descriptor (close-on-exec), or -1 with errno.
int shm_open_rw(const char* name, bool create);

// What map_shared made: the mapping, or nullptr and why.
struct Mapping {
  void* base = nullptr;
  int err = 0;            // the failed step's error number; 0 when the object had another size
  const char* step = "";  // "sizing" (reserving the memory), "mapping", or "size"
  long long size = 0;     // with step "size": the object's size
};

// Maps `bytes` of the object behind `fd` read-write, shared, and closes `fd`. With `reserve` it
// first reserves them (posix_fallocate, not ftruncate alone: a full /dev/shm fails here, not with
// SIGBUS on first touch); otherwise the object must already be exactly `bytes` long.
Mapping map_shared(int fd, size_t bytes, bool reserve);

}  // namespace flock_sys
