#include "shm_group.h"
#include <poll.h>
#include <algorithm>
#include <cstring>
#include <exception>
#include <optional>
#include <random>
#include <utility>
#include "../error.h"
#include "reduce.h"

namespace flock::dist {
namespace {
constexpr int kMaxFused = 8;  // peers' slices folded in per pass over this rank's own
}  // namespace

std::unique_ptr<ShmGroup> ShmGroup::join(const std::string& name, int rank, int size, const std::vector<Link>& links,
                                         const std::atomic<int>& timeout_ms, Check check) {
  const int t = timeout_ms.load();
  std::vector<int> fds(size, -1), ids(size, -1);
  for (int r = 0; r < size; ++r) {
    ids[r] = links[r].peer;
    if (r != rank) fds[r] = links[r].fd;
  }
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
  return std::unique_ptr<ShmGroup>(
      new ShmGroup(std::move(*seg), rank, std::move(fds), std::move(ids), timeout_ms, std::move(check)));
}

ShmGroup::ShmGroup(ShmSegment seg, int rank, std::vector<int> fds, std::vector<int> ids, const std::atomic<int>& timeout_ms,
                   Check check)
    : seg_(std::move(seg)),
      rank_(rank),
      size_(seg_.size()),
      fds_(std::move(fds)),
      ids_(std::move(ids)),
      timeout_ms_(timeout_ms),
      check_(std::move(check)) {}

void ShmGroup::begin(const CallHeader& h) {
  seq_ = h.seq;
  syncs_ = 0;
  std::memcpy(seg_.header(rank_, seq_), &h, sizeof h);
}

void ShmGroup::sync() {
  seg_.post(rank_, ++step_);
  seg_.wait_all(
      step_, timeout_ms_.load(), [this] { alive(); }, ids_);
  // Every header is in the segment by the first barrier, so every rank checks them all: each one
  // that disagrees with another fails with the mismatch itself, not with the loss of a peer that
  // saw it first and left.
  if (++syncs_ == 1)
    for (int r = 0; r < size_; ++r) {
      if (r == rank_) continue;
      CallHeader theirs;
      std::memcpy(&theirs, seg_.header(r, seq_), sizeof theirs);
      check_(ids_[r], theirs);
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
      fail(Code::PeerLost, "lost connection to rank ", ids_[peer], " (it closed the connection)");
    }
}

void ShmGroup::alive(int peer) const {
  pollfd p{fds_[peer], POLLRDHUP, 0};
  if (::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)))
    fail(Code::PeerLost, "lost connection to rank ", ids_[peer], " (it closed the connection)");
}

void ShmGroup::pipe_wait(int peer, const std::function<bool()>& ready, const char* what, const char* call) {
  const int t = timeout_ms_.load();
  seg_.wait_until(
      ready, t, [&] { alive(peer); },
      [&] {
        fail(Code::Timeout, "rank ", ids_[peer], " ", what, " for ", t, " ms (is it alive and calling the matching ", call, "?)");
      });
}

void ShmGroup::pipe_write(int peer, const void* p, size_t n) {
  ShmSegment::Pipe* q = seg_.pipe(rank_, peer);
  char* ring = seg_.pipe_data(rank_, peer);
  const size_t cap = seg_.pipe_bytes();
  const char* src = static_cast<const char*>(p);
  uint64_t w = q->written.load(std::memory_order_relaxed);  // only this rank moves it
  while (n > 0) {
    uint64_t room = 0;
    pipe_wait(
        peer, [&] { return (room = cap - (w - q->read.load(std::memory_order_acquire))) > 0; }, "took nothing", "recv");
    const size_t at = w % cap, k = std::min({n, static_cast<size_t>(room), cap - at});
    std::memcpy(ring + at, src, k);
    w += k;
    src += k;
    n -= k;
    q->written.store(w, std::memory_order_seq_cst);  // after the bytes; before the sleeper check in notify
    seg_.notify();
  }
}

void ShmGroup::pipe_read(int peer, void* p, size_t n) {
  ShmSegment::Pipe* q = seg_.pipe(peer, rank_);
  const char* ring = seg_.pipe_data(peer, rank_);
  const size_t cap = seg_.pipe_bytes();
  char* dst = static_cast<char*>(p);
  uint64_t r = q->read.load(std::memory_order_relaxed);  // only this rank moves it
  while (n > 0) {
    uint64_t ready = 0;
    pipe_wait(
        peer, [&] { return (ready = q->written.load(std::memory_order_acquire) - r) > 0; }, "sent nothing", "send");
    const size_t at = r % cap, k = std::min({n, static_cast<size_t>(ready), cap - at});
    std::memcpy(dst, ring + at, k);
    r += k;
    dst += k;
    n -= k;
    q->read.store(r, std::memory_order_seq_cst);
    seg_.notify();
  }
}

// Rounds alternate between the two halves of every slot, so a round may write its half as soon
// as the previous round's first barrier has passed: by then every rank is done reading what the
// round before that left in it.
char* ShmGroup::half(int rank, uint64_t round) const { return seg_.slot(rank) + (round & 1) * chunk_bytes(); }

// Rounds pipelined one step apart, so that one barrier a round serves two: step s copies in round
// s's slices and publishes round s-1's reduced one, then, after the barrier, copies round s-1's
// reduced slices out and reduces round s. Nothing a step writes can still be read by a peer: the
// copy-in fills the peers' slices of round s's half, which they last reduced from in step s-2
// (round s-2 used that half); the publish fills this rank's slice of round s-1's half, which they
// last copied out in step s-2 (round s-3). This rank's slice of round s-2, which peers may still be
// copying out (step s-1), is in round s's half too, but slice k sits at k x stride whatever its
// round's length, so the copy-in never touches it.
void ShmGroup::allreduce(const CallHeader& h, char* data, size_t n, DType dt, ReduceOp op) {
  begin(h);
  const size_t es = dtype_size(dt), stride = chunk_bytes() / es / static_cast<size_t>(size_);
  const size_t per = stride * static_cast<size_t>(size_), rounds = (n + per - 1) / per;
  auto lo = [&](size_t r, int k) {  // round r's slice k: [lo(r, k), lo(r, k + 1)) of `data`
    const size_t c = std::min(per, n - r * per);
    return r * per + c * static_cast<size_t>(k) / static_cast<size_t>(size_);
  };
  auto at = [&](int rank, size_t r, int k) { return half(rank, round_ + r) + static_cast<size_t>(k) * stride * es; };
  auto bytes = [&](size_t r, int k) { return (lo(r, k + 1) - lo(r, k)) * es; };
  for (size_t s = 0; s <= rounds; ++s) {
    // Round s's slices the peers reduce (this rank's own stays in `data`); round s-1's reduced one.
    if (s < rounds)
      for (int j = 0; j < size_; ++j)
        if (j != rank_) std::memcpy(at(rank_, s, j), data + lo(s, j) * es, bytes(s, j));
    if (s > 0) std::memcpy(at(rank_, s - 1, rank_), data + lo(s - 1, rank_) * es, bytes(s - 1, rank_));
    sync();
    if (s > 0)
      for (int j = 0; j < size_; ++j)
        if (j != rank_) std::memcpy(data + lo(s - 1, j) * es, at(j, s - 1, j), bytes(s - 1, j));
    if (s == rounds) break;
    // Round s's slice `rank`, reduced in place from every peer's slot.
    char* own = data + lo(s, rank_) * es;
    const size_t len = lo(s, rank_ + 1) - lo(s, rank_);
    const void* peers[kMaxFused];
    for (int j = 0, k = 0; j < size_; ++j)
      if (j != rank_) {
        peers[k++] = at(j, s, rank_);
        if (k == kMaxFused || j == last_peer()) reduce_many(own, peers, std::exchange(k, 0), len, dt, op);
      }
    if (op == ReduceOp::Avg) scale_into(own, len, dt, 1.0 / size_);
  }
  round_ += rounds;
  finish();
}

void ShmGroup::reduce_scatter(const CallHeader& h, const char* in, char* out, size_t m, DType dt, ReduceOp op) {
  begin(h);
  const size_t es = dtype_size(dt), per = chunk_bytes() / (es * static_cast<size_t>(size_));
  for (size_t base = 0; base < m; base += per, ++round_) {
    const size_t c = std::min(per, m - base), cb = c * es;
    char* mine = half(rank_, round_);
    for (int j = 0; j < size_; ++j)
      if (j != rank_) std::memcpy(mine + j * cb, in + (j * m + base) * es, cb);
    sync();
    char* o = out + base * es;
    std::memmove(o, in + (rank_ * m + base) * es, cb);
    const void* peers[kMaxFused];
    for (int j = 0, k = 0; j < size_; ++j)
      if (j != rank_) {
        peers[k++] = half(j, round_) + rank_ * cb;
        if (k == kMaxFused || j == last_peer()) reduce_many(o, peers, std::exchange(k, 0), c, dt, op);
      }
    if (op == ReduceOp::Avg) scale_into(o, c, dt, 1.0 / size_);
  }
  finish();
}

void ShmGroup::allgather(const CallHeader& h, const char* in, char* out, size_t m, size_t es) {
  begin(h);
  const size_t per = chunk_bytes() / es;
  for (size_t base = 0; base < m; base += per, ++round_) {
    const size_t c = std::min(per, m - base);
    std::memcpy(half(rank_, round_), in + base * es, c * es);
    sync();
    for (int j = 0; j < size_; ++j) {
      char* o = out + (j * m + base) * es;
      if (j != rank_)
        std::memcpy(o, half(j, round_), c * es);
      else
        std::memmove(o, in + base * es, c * es);  // `in` may be this rank's block of `out`
    }
  }
  finish();
}

void ShmGroup::broadcast(const CallHeader& h, char* data, size_t bytes, int root) {
  begin(h);
  const size_t per = chunk_bytes();
  for (size_t base = 0; base < bytes; base += per, ++round_) {
    const size_t c = std::min(per, bytes - base);
    if (rank_ == root) std::memcpy(half(root, round_), data + base, c);
    sync();
    if (rank_ != root) std::memcpy(data + base, half(root, round_), c);
  }
  finish();
}

void ShmGroup::barrier(const CallHeader& h) {
  begin(h);
  finish();
}

}  // namespace flock::dist
