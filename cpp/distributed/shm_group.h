// The ring backend's collectives over shared memory, for a group whose ranks all run on one host
// (ring.cc picks it at connect unless FLOCKML_TRANSPORT=tcp). Data goes through the segment's
// per-rank slots (shm_segment.h) in rounds of half a slot, rounds alternating between the halves:
//   allReduce      each rank copies in the slices of its chunk the peers reduce; rank k reduces
//                  slice k straight out of the peers' slots into its own tensor (a reduce-scatter
//                  with no copy in between) and publishes it; every rank copies the others' reduced
//                  slices out (an all-gather). Rounds are pipelined a step apart (one round's
//                  publish and copy-out share a barrier with the next one's copy-in and reduction),
//                  so a round costs one barrier, as in the other collectives;
//   reduceScatter  each rank lays in its chunks of the blocks the peers reduce; rank k reduces
//                  block k of every slot into its output;
//   allGather      each rank copies its chunk in; every rank copies every peer's out;
//   broadcast      the root copies its chunk in; the others copy it out.
// Between the phases every rank posts its step counter and waits for all the others' (a barrier
// on the segment). A round writes only before its first barrier and reads after it, so with two
// halves no slot is rewritten before every reader is done with it, and a round needs one barrier
// (allReduce's pipelined rounds: shm_group.cc).
//
// Call headers: each rank writes its header before the first phase and, after that phase's
// barrier, checks every other rank's (all are in the segment by then, so each rank that disagrees
// with another fails with the mismatch itself), before taking any peer's data.
// Every collective has a second barrier after the check, so a rank that saw a mismatch (and posts
// nothing more) keeps every other rank from completing the call; they learn why on the control
// connections.
//
// send/recv go through the segment's pipe from the sender to the receiver (shm_segment.h): the
// same byte stream as on the pair's TCP link, the call header then the data, so the receiver
// checks the header as it would there. A wait on a pipe watches only the peer's connection: the
// loss of another rank is no concern of this pair's.
#pragma once
#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>
#include "../dtype.h"
#include "call_header.h"
#include "process_group.h"
#include "shm_segment.h"
#include "socket.h"

namespace flock::dist {

class ShmGroup {
 public:
  // Throws ERR_COLLECTIVE_MISMATCH when `theirs`, the header group rank `from` wrote, differs from this rank's.
  using Check = std::function<void(int from, const CallHeader& theirs)>;

  // Called by every rank during connect, while `links` (this rank's data connections, indexed by
  // peer) are still blocking: rank 0 creates segment `name`, the others map it, and rank 0
  // unlinks the name once all have. `rank` and `size` count the ranks sharing the segment; where
  // they are some of a larger group's (one host's, hier_group.h), links[r].peer is the group rank
  // of member r (links[rank].peer this rank's own), used in checks and messages.
  static std::unique_ptr<ShmGroup> join(const std::string& name, int rank, int size, const std::vector<Link>& links,
                                        const std::atomic<int>& timeout_ms, Check check);

  void allreduce(const CallHeader& h, char* data, size_t n, DType dt, ReduceOp op);
  void reduce_scatter(const CallHeader& h, const char* in, char* out, size_t m, DType dt, ReduceOp op);
  void allgather(const CallHeader& h, const char* in, char* out, size_t m, size_t es);
  void broadcast(const CallHeader& h, char* data, size_t bytes, int root);
  void barrier(const CallHeader& h);
  // Into / out of the pipe to / from member `peer` (an index as `rank`), blocking while it is full
  // / empty; the wait ends with ERR_PEER_LOST when the peer's connection closes, ERR_TIMEOUT after
  // the group's timeout without progress.
  void pipe_write(int peer, const void* p, size_t n);
  void pipe_read(int peer, void* p, size_t n);

 private:
  ShmGroup(ShmSegment seg, int rank, std::vector<int> fds, std::vector<int> ids, const std::atomic<int>& timeout_ms, Check check);
  void begin(const CallHeader& h);
  void sync();                 // post the next step and wait for every rank's; the first of a call checks headers
  void finish();               // at least one barrier after the header check
  void alive() const;          // throws ERR_PEER_LOST when a peer's connection has closed (it died, or left)
  void alive(int peer) const;  // the same for one peer
  void pipe_wait(int peer, const std::function<bool()>& ready, const char* what, const char* call);
  int last_peer() const { return rank_ == size_ - 1 ? size_ - 2 : size_ - 1; }
  size_t chunk_bytes() const { return seg_.slot_bytes() / 2; }  // what one round moves per rank
  char* half(int rank, uint64_t round) const;                   // the half of `rank`'s slot round `round` (over all calls) uses

  ShmSegment seg_;
  const int rank_, size_;
  const std::vector<int> fds_;  // the peers' TCP data connections, watched while waiting
  const std::vector<int> ids_;  // the group rank of each member, for checks and messages
  const std::atomic<int>& timeout_ms_;
  const Check check_;
  uint64_t step_ = 0;   // this rank's last posted step
  int64_t seq_ = 0;     // the running call's number (its header slot)
  int syncs_ = 0;       // barriers so far in the running call
  uint64_t round_ = 0;  // rounds so far, over all calls: which half of each slot is in use
};

}  // namespace flock::dist
