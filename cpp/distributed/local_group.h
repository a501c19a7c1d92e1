// In-process collectives between virtual CPU devices: one ProcessGroup per device, all sharing a
// clique in this process's memory (no sockets). A collective posted on a group queues a task on
// that device's stream, so it runs after the work queued there before it and before the work
// queued after it; the tasks of one collective meet at a rendezvous (a condition variable with a
// deadline, never a spin), reduce in parallel (each device reduces its slice of the elements with
// its own threads), and leave together. Calls on every group in the same order form one
// collective, as ranks of a multi-process job would; a device that never posts fails the others
// with ERR_TIMEOUT naming it.
#pragma once
#include <memory>
#include <vector>
#include "process_group.h"

namespace flock::dist {

class LocalCpuGroup : public ProcessGroup {
 public:
  // Reduces `t` across the group into rank `root`'s tensor; the others' are left unchanged.
  virtual void reduce(Tensor t, int root, ReduceOp op, Done done) = 0;
};

// One group per device of `devices` (distinct CPU devices): group i has rank i and takes tensors
// on devices[i]. Collectives wait at most `timeout_ms` for the other devices to post.
std::vector<std::shared_ptr<LocalCpuGroup>> make_local_cpu_groups(const std::vector<Device>& devices, int timeout_ms);

}  // namespace flock::dist
