#include "hier_group.h"
#include <algorithm>
#include <cstring>
#include "../error.h"
#include "reduce.h"

namespace flock::dist {

HierGroup::HierGroup(int rank, const std::vector<int>& host_of, std::unique_ptr<ShmGroup> local, TcpSteps& tcp)
    : rank_(rank), size_(static_cast<int>(host_of.size())), host_of_(host_of), local_(std::move(local)), tcp_(tcp) {
  for (int r = 0; r < size_; ++r) {
    const int h = host_of[r];
    FLOCK_CHECK(h >= 0 && h <= static_cast<int>(hosts_.size()), Arg, "ring: host index ", h, " of rank ", r,
                " skips a host (hosts are numbered in order of first appearance)");
    if (h == static_cast<int>(hosts_.size())) hosts_.emplace_back();
    hosts_[h].push_back(r);
  }
  host_ = host_of[rank];
  const auto& mine = hosts_[host_];
  local_index_ = static_cast<int>(std::find(mine.begin(), mine.end(), rank) - mine.begin());
  for (const auto& h : hosts_) leaders_.push_back(h[0]);
  FLOCK_CHECK((mine.size() > 1) == (local_ != nullptr), Internal, "ring: rank ", rank, " shares its host with ", mine.size() - 1,
              " ranks but ", local_ ? "has" : "has no", " segment");
}

void HierGroup::host_segments(size_t m, std::vector<size_t>* off, std::vector<size_t>* len) const {
  off->clear();
  len->clear();
  size_t o = 0;
  for (const auto& h : hosts_) {
    off->push_back(o);
    len->push_back(h.size() * m);
    o += h.size() * m;
  }
}

void HierGroup::allreduce(const CallHeader& h, char* data, size_t n, DType dt, ReduceOp op) {
  // Avg: sums all the way, scaled once by the leader, so every rank ends with the leader's bits.
  const ReduceOp inner = op == ReduceOp::Avg ? ReduceOp::Sum : op;
  if (local_) local_->allreduce(h, data, n, dt, inner);
  if (leader()) {
    tcp_.tcp_allreduce(leaders_, data, n, dt, inner);
    if (op == ReduceOp::Avg) scale_into(data, n, dt, 1.0 / size_);
  }
  if (local_) local_->broadcast(h, data, n * dtype_size(dt), 0);
}

void HierGroup::reduce_scatter(const CallHeader& h, const char* in, char* out, size_t m, DType dt, ReduceOp op) {
  const ReduceOp inner = op == ReduceOp::Avg ? ReduceOp::Sum : op;
  const size_t es = dtype_size(dt);
  std::vector<size_t> off, len;
  host_segments(m, &off, &len);
  // The input's blocks host by host (the input is not ours to overwrite).
  scratch_.resize(static_cast<size_t>(size_) * m * es);
  char* buf = scratch_.data();
  for (size_t g = 0; g < hosts_.size(); ++g)
    for (size_t j = 0; j < hosts_[g].size(); ++j)
      if (m) std::memcpy(buf + (off[g] + j * m) * es, in + static_cast<size_t>(hosts_[g][j]) * m * es, m * es);
  if (local_) local_->allreduce(h, buf, static_cast<size_t>(size_) * m, dt, inner);
  char* seg = buf + off[host_] * es;
  if (leader()) {
    tcp_.tcp_reduce_scatter(leaders_, buf, dt, inner, off, len);
    if (op == ReduceOp::Avg) scale_into(seg, len[host_], dt, 1.0 / size_);
  }
  if (local_) local_->broadcast(h, seg, len[host_] * es, 0);
  if (m) std::memcpy(out, seg + static_cast<size_t>(local_index_) * m * es, m * es);
}

void HierGroup::allgather(const CallHeader& h, const char* in, char* out, size_t m, size_t es) {
  std::vector<size_t> off, len;
  host_segments(m, &off, &len);
  scratch_.resize(static_cast<size_t>(size_) * m * es);
  char* buf = scratch_.data();
  // This host's blocks, in place in the host-by-host layout (`in` may be this rank's block of `out`).
  char* mine = buf + off[host_] * es;
  if (local_)
    local_->allgather(h, in, mine, m, es);
  else if (m)
    std::memcpy(mine, in, m * es);
  if (leader()) {
    tcp_.tcp_all_gather(leaders_, buf, es, off, len);
    for (size_t g = 0; g < hosts_.size(); ++g)
      for (size_t j = 0; j < hosts_[g].size(); ++j)
        if (m) std::memcpy(out + static_cast<size_t>(hosts_[g][j]) * m * es, buf + (off[g] + j * m) * es, m * es);
  }
  if (local_) local_->broadcast(h, out, static_cast<size_t>(size_) * m * es, 0);
}

void HierGroup::broadcast(const CallHeader& h, char* data, size_t bytes, int root) {
  // The contacts: the root on its host, the leader on every other.
  std::vector<int> contacts = leaders_;
  const int root_host = host_of_[root];
  contacts[root_host] = root;
  const int contact = contacts[host_];
  if (contact == rank_) tcp_.tcp_broadcast(contacts, data, bytes, root_host);
  if (local_) {
    const auto& mine = hosts_[host_];
    local_->broadcast(h, data, bytes, static_cast<int>(std::find(mine.begin(), mine.end(), contact) - mine.begin()));
  }
}

ShmGroup* HierGroup::local(int peer, int* index) const {
  if (!local_ || host_of_[peer] != host_) return nullptr;
  const auto& mine = hosts_[host_];
  *index = static_cast<int>(std::find(mine.begin(), mine.end(), peer) - mine.begin());
  return local_.get();
}

void HierGroup::barrier(const CallHeader& h) {
  if (local_) local_->barrier(h);
  if (leader()) tcp_.tcp_barrier(leaders_);
  if (local_) local_->barrier(h);
}

}  // namespace flock::dist
