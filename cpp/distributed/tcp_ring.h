// The ring backend's TCP algorithms (ring.cc describes them and the call headers that lead
// them): ring reduce-scatter and all-gather steps, recursive doubling, the pipelined broadcast
// and the barrier, over a view of the group's ranks, every rank by default, or one rank per
// host in a phase of a hierarchical collective (hier_group.h, which drives it through TcpSteps).
#pragma once
#include <atomic>
#include <functional>
#include <vector>
#include "../dtype.h"
#include "call_header.h"
#include "hier_group.h"
#include "process_group.h"
#include "socket.h"

namespace flock::dist {

inline int mod(int a, int n) { return ((a % n) + n) % n; }

class TcpRing : public TcpSteps {
 protected:
  TcpRing(int rank, int size, int timeout_ms) : rank_(rank), size_(size), timeout_ms_(timeout_ms) {
    links_.resize(size);
    for (int r = 0; r < size; ++r) links_[r].peer = r;
    reset_view();
  }

  // ERR_COLLECTIVE_MISMATCH when theirs_, the header group rank `from` sent, differs from mine_.
  // Also notes a header that says its rank's post had failed (ring.cc).
  virtual void check_call(int from) = 0;

  // The ranks the steps run over: every rank, or (a phase of hier_group.h) one per host.
  int vsize() const { return static_cast<int>(view_.size()); }
  int vrank(int k) const { return view_[mod(vpos_ + k, vsize())]; }  // k places on from this rank
  int view_rank(int k) const { return view_[k]; }                    // the k-th rank of the view
  const Link& vlink(int k) const { return links_[vrank(k)]; }
  void reset_view();
  // Runs `steps` over `ring` with the running call's header leading them.
  void over(const std::vector<int>& ring, const std::function<void()>& steps);

  // TcpSteps, for hier_group.h.
  void tcp_allreduce(const std::vector<int>& ring, char* data, size_t n, DType dt, ReduceOp op) override;
  void tcp_reduce_scatter(const std::vector<int>& ring, char* base, DType dt, ReduceOp op, const std::vector<size_t>& off,
                          const std::vector<size_t>& len) override;
  void tcp_all_gather(const std::vector<int>& ring, char* base, size_t es, const std::vector<size_t>& off,
                      const std::vector<size_t>& len) override;
  void tcp_broadcast(const std::vector<int>& ring, char* data, size_t bytes, int root_pos) override;
  void tcp_barrier(const std::vector<int>& ring) override;

  // Over the view.
  void ring_allreduce(char* data, size_t n, DType dt, ReduceOp op);
  void ring_broadcast(char* p, size_t bytes, int root_pos);
  void ring_barrier();
  const Lead* take_lead(const Link* out, const Link* in);
  void agree();
  void doubling_allreduce(char* data, size_t n, DType dt, ReduceOp op);
  void split(size_t n, std::vector<size_t>* off, std::vector<size_t>* len) const;
  void reduce_scatter_steps(char* base, DType dt, ReduceOp op, const std::vector<size_t>& off, const std::vector<size_t>& len);
  void all_gather_steps(char* base, size_t es, const std::vector<size_t>& off, const std::vector<size_t>& len);

  const int rank_, size_;
  std::atomic<int> timeout_ms_;
  std::vector<Link> links_;  // indexed by peer rank
  // The running collective's header, the predecessor's, and whether ours has gone out; comm thread only.
  CallHeader mine_, theirs_;
  bool unsent_ = false;

 private:
  std::vector<char> staging_;  // receive buffer of reduce-scatter steps; comm thread only
  const Lead lead_{&mine_, &theirs_, sizeof(CallHeader), [this] { check_call(vrank(-1)); }};
  int partner_ = 0;  // the doubling partner of the exchange under way
  const Lead partner_lead_{&mine_, &theirs_, sizeof(CallHeader), [this] { check_call(partner_); }};
  std::vector<int> view_;  // the ranks the steps run over, in ring order; comm thread only
  int vpos_ = 0;           // this rank's place in view_
};

}  // namespace flock::dist
