// The ring backend's collectives for a group whose ranks span hosts, some of which run more than
// one rank (as NCCL's and Horovod's hierarchical collectives): the ranks of each host share a
// segment (shm_group.h), and TCP carries only what must cross between hosts.
//
// A leader scheme: on every host one rank, its contact, takes part in a TCP ring (tcp_steps) of
// one rank per host; the others talk to it through shared memory only.
//   allReduce      shm allReduce within each host; the leaders (each host's lowest rank)
//                  allReduce the hosts' sums over TCP; each leader broadcasts the result within
//                  its host;
//   reduceScatter  the input's blocks laid out host by host, then as allReduce but with a TCP
//                  reduce-scatter of one segment per host, and each leader broadcasting its
//                  host's segment, from which every rank takes its block;
//   allGather      shm allGather within each host; the leaders all-gather the hosts' blocks over
//                  TCP; each leader broadcasts the whole result within its host;
//   broadcast      a TCP broadcast among the contacts (the root on its host, the leaders
//                  elsewhere), then an shm broadcast from the contact on every host;
//   barrier        shm barrier, a TCP barrier of the leaders, shm barrier.
// The leader scheme, not one TCP ring per local index (reduce-scatter within the host, then each
// local rank allreducing its slice with the same-index ranks elsewhere): hosts may run different
// numbers of ranks (2 + 1), which the per-index rings cannot pair up, and between hosts the bytes
// each host sends are the same (2(H-1)/H of the data per host) either way.
//
// Call headers: every rank writes its header in each shm phase, where every local rank checks
// every other's; the contacts' headers lead their TCP phase, where each checks its ring
// predecessor's. Every rank is thus compared with every other through a chain of checks, and
// each phase ends in a barrier (shm) or needs every contact's data (TCP), so on a mismatch no rank
// completes the call: the ranks that see it report it on the control connections, the others
// learn it there when their peers stop (their connections to the failed ranks close).
#pragma once
#include <cstddef>
#include <memory>
#include <vector>
#include "../dtype.h"
#include "call_header.h"
#include "process_group.h"
#include "shm_group.h"

namespace flock::dist {

// The TCP ring's collectives over some of the group's ranks, `ring` (group ranks, in ring order,
// this rank among them), as the hierarchy drives them. Each leads with the running call's header.
class TcpSteps {
 public:
  virtual ~TcpSteps() = default;
  virtual void tcp_allreduce(const std::vector<int>& ring, char* data, size_t n, DType dt, ReduceOp op) = 0;
  // Segment k ([off[k], off[k] + len[k]) elements of `base`) ends reduced on ring[k].
  virtual void tcp_reduce_scatter(const std::vector<int>& ring, char* base, DType dt, ReduceOp op, const std::vector<size_t>& off,
                                  const std::vector<size_t>& len) = 0;
  // Segment k, held by ring[k], ends on every member.
  virtual void tcp_all_gather(const std::vector<int>& ring, char* base, size_t es, const std::vector<size_t>& off,
                              const std::vector<size_t>& len) = 0;
  virtual void tcp_broadcast(const std::vector<int>& ring, char* data, size_t bytes, int root_pos) = 0;
  virtual void tcp_barrier(const std::vector<int>& ring) = 0;
};

class HierGroup {
 public:
  // `host_of[r]`: the host index (0, 1, ... in order of first appearance) of group rank r. `local`:
  // this host's segment group, null when this rank is alone on its host.
  HierGroup(int rank, const std::vector<int>& host_of, std::unique_ptr<ShmGroup> local, TcpSteps& tcp);

  void allreduce(const CallHeader& h, char* data, size_t n, DType dt, ReduceOp op);
  void reduce_scatter(const CallHeader& h, const char* in, char* out, size_t m, DType dt, ReduceOp op);
  void allgather(const CallHeader& h, const char* in, char* out, size_t m, size_t es);
  void broadcast(const CallHeader& h, char* data, size_t bytes, int root);
  void barrier(const CallHeader& h);
  // This host's segment group when group rank `peer` is on this host (*index: its place there),
  // else null: send/recv between the two go through its pipes.
  ShmGroup* local(int peer, int* index) const;

 private:
  bool leader() const { return hosts_[host_][0] == rank_; }
  // Host by host, the ranks of each in order: element offsets and lengths of `m`-element blocks.
  void host_segments(size_t m, std::vector<size_t>* off, std::vector<size_t>* len) const;

  const int rank_, size_;
  std::vector<std::vector<int>> hosts_;  // the group ranks on each host, ascending
  std::vector<int> host_of_;
  int host_ = 0;              // this rank's host
  int local_index_ = 0;       // this rank's place among its host's ranks
  std::vector<int> leaders_;  // each host's lowest rank, host by host
  std::unique_ptr<ShmGroup> local_;
  TcpSteps& tcp_;
  std::vector<char> scratch_;
};

}  // namespace flock::dist
