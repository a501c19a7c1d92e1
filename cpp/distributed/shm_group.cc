#include "shm_group.h"
#include <poll.h>
#include <algorithm>
#include <cstring>
#include <exception>
#include <optional>
#include <random>
#include "../error.h"
#include "reduce.h"

namespace flock::dist {

std::unique_ptr<ShmGroup> ShmGroup::join(const std::string& name, int rank, int size, const std::vector<Link>& links,
                                         const std::atomic<int>& timeout_ms, Check check) {
  const int t = timeout_ms.load();
  std::vector<int> fds(size, -1);
  for (int r = 0; r < size; ++r)
    if (r != rank) fds[r] = links[r].fd;
  std::optional<ShmSegment> seg;
  if (rank == 0) {
    std::random_device rd;
    uint64_t nonce = ((uint64_t(rd()) << 32) | rd()) | 1;  // 0 tells the others the segment could not be made
    std::exception_ptr failed;
    try {
      seg.emplace(ShmSegment::create(name, size, nonce));
    } catch (...) {
      failed = std::current_exception();
      nonce = 0;
    }
    try {
      for (int r = 1; r < size; ++r) write_exact(links[r], &nonce, sizeof nonce, t);
      if (failed) std::rethrow_exception(failed);
      int bad = -1;
      for (int r = 1; r < size; ++r) {
        int32_t status = 0;
        read_exact(links[r], &status, sizeof status, t);
        if (status != 0 && bad < 0) bad = r;
      }
      ShmSegment::unlink(name);  // every rank has it mapped (or has given up): the name can go
      if (bad >= 0) fail(Code::IO, "shared-memory transport: rank ", bad, " could not map segment '", name, "'");
    } catch (...) {
      ShmSegment::unlink(name);
      throw;
    }
  } else {
    uint64_t nonce = 0;
    try {
      read_exact(links[0], &nonce, sizeof nonce, t);
    } catch (...) {
      ShmSegment::unlink(name);  // rank 0 is gone: nobody else will remove it
      throw;
    }
    if (nonce == 0) fail(Code::IO, "shared-memory transport: rank 0 could not create segment '", name, "'");
    int32_t status = 0;
    std::exception_ptr failed;
    try {
      seg.emplace(ShmSegment::open(name, size, nonce));
    } catch (...) {
      failed = std::current_exception();
      status = 1;
    }
    write_exact(links[0], &status, sizeof status, t);
    if (failed) std::rethrow_exception(failed);
  }
  return std::unique_ptr<ShmGroup>(new ShmGroup(std::move(*seg), rank, std::move(fds), timeout_ms, std::move(check)));
}

ShmGroup::ShmGroup(ShmSegment seg, int rank, std::vector<int> fds, const std::atomic<int>& timeout_ms, Check check)
    : seg_(std::move(seg)), rank_(rank), size_(seg_.size()), fds_(std::move(fds)), timeout_ms_(timeout_ms), check_(std::move(check)) {}

void ShmGroup::begin(const CallHeader& h) {
  seq_ = h.seq;
  syncs_ = 0;
  std::memcpy(seg_.header(rank_, seq_), &h, sizeof h);
}

void ShmGroup::sync() {
  seg_.post(rank_, ++step_);
  seg_.wait_all(step_, timeout_ms_.load(), [this] { alive(); });
  if (++syncs_ == 1) {
    const int prev = (rank_ + size_ - 1) % size_;
    CallHeader theirs;
    std::memcpy(&theirs, seg_.header(prev, seq_), sizeof theirs);
    check_(prev, theirs);
  }
}

void ShmGroup::finish() {
  while (syncs_ < 2) sync();
}

void ShmGroup::alive() const {
  std::vector<pollfd> p;
  for (int r = 0; r < size_; ++r)
    if (r != rank_) p.push_back({fds_[r], POLLRDHUP, 0});
  // Data never arrives on these connections while a collective runs here (send/recv use them
  // between calls), so only a hang-up is looked for.
  if (::poll(p.data(), p.size(), 0) <= 0) return;
  for (const pollfd& q : p)
    if (q.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) {
      const int peer = static_cast<int>(std::find(fds_.begin(), fds_.end(), q.fd) - fds_.begin());
      fail(Code::PeerLost, "lost connection to rank ", peer, " (it closed the connection)");
    }
}

void ShmGroup::allreduce(const CallHeader& h, char* data, size_t n, DType dt, ReduceOp op) {
  begin(h);
  const size_t es = dtype_size(dt), per = seg_.slot_bytes() / es;
  char* mine = seg_.slot(rank_);
  for (size_t base = 0; base < n; base += per) {
    const size_t c = std::min(per, n - base);
    auto lo = [&](int k) { return c * static_cast<size_t>(k) / static_cast<size_t>(size_); };  // slice k is [lo(k), lo(k + 1))
    std::memcpy(mine, data + base * es, c * es);
    sync();
    // Slice `rank` of every slot, reduced into this rank's own: the peers read only their own slices.
    const size_t a = lo(rank_), len = lo(rank_ + 1) - a;
    for (int j = 0; j < size_; ++j)
      if (j != rank_) reduce_into(mine + a * es, seg_.slot(j) + a * es, len, dt, op);
    if (op == ReduceOp::Avg) scale_into(mine + a * es, len, dt, 1.0 / size_);
    sync();
    for (int j = 0; j < size_; ++j) {
      const size_t aj = lo(j), lj = lo(j + 1) - aj;
      std::memcpy(data + (base + aj) * es, seg_.slot(j) + aj * es, lj * es);
    }
    sync();  // every slot read: the next round (or call) may overwrite them
  }
  finish();
}

void ShmGroup::reduce_scatter(const CallHeader& h, const char* in, char* out, size_t m, DType dt, ReduceOp op) {
  begin(h);
  const size_t es = dtype_size(dt), per = seg_.slot_bytes() / (es * static_cast<size_t>(size_));
  char* mine = seg_.slot(rank_);
  for (size_t base = 0; base < m; base += per) {
    const size_t c = std::min(per, m - base), cb = c * es;
    for (int j = 0; j < size_; ++j) std::memcpy(mine + j * cb, in + (j * m + base) * es, cb);
    sync();
    char* o = out + base * es;
    std::memcpy(o, mine + rank_ * cb, cb);
    for (int j = 0; j < size_; ++j)
      if (j != rank_) reduce_into(o, seg_.slot(j) + rank_ * cb, c, dt, op);
    if (op == ReduceOp::Avg) scale_into(o, c, dt, 1.0 / size_);
    sync();
  }
  finish();
}

void ShmGroup::allgather(const CallHeader& h, const char* in, char* out, size_t m, size_t es) {
  begin(h);
  const size_t per = seg_.slot_bytes() / es;
  for (size_t base = 0; base < m; base += per) {
    const size_t c = std::min(per, m - base);
    std::memcpy(seg_.slot(rank_), in + base * es, c * es);
    sync();
    for (int j = 0; j < size_; ++j) std::memcpy(out + (j * m + base) * es, seg_.slot(j), c * es);
    sync();
  }
  finish();
}

void ShmGroup::broadcast(const CallHeader& h, char* data, size_t bytes, int root) {
  begin(h);
  const size_t per = seg_.slot_bytes();
  for (size_t base = 0; base < bytes; base += per) {
    const size_t c = std::min(per, bytes - base);
    if (rank_ == root) std::memcpy(seg_.slot(root), data + base, c);
    sync();
    if (rank_ != root) std::memcpy(data + base, seg_.slot(root), c);
    sync();
  }
  finish();
}

void ShmGroup::barrier(const CallHeader& h) {
  begin(h);
  finish();
}

}  // namespace flock::dist
