// The simulated NCCL's communicators: joining a clique, and running collectives and send/recv
// over the clique's shared-memory segment (the protocol is described in nccl_comm.h).
#include "nccl_comm.h"
#include <algorithm>
#include <cstring>
#include "nccl_reduce.h"
#include "runtime_state.h"

namespace sim::nccl {
namespace {

// Non-blocking init reports InProgress at least this long, so a caller's polling path runs even
// when every rank joins at once (a real init takes milliseconds to seconds).
constexpr auto kReadyDelay = std::chrono::milliseconds(3);
// A waiter re-checks abort and process exit this often even if nobody rings.
constexpr int kWaitSliceMs = 50;

}  // namespace

bool is_p2p(Kind k) { return k == Kind::Send || k == Kind::Recv; }

std::shared_ptr<Comm> Comm::join(const std::string& segment, int nranks, int rank, int device, ncclResult_t* err,
                                 std::string* why) {
  std::unique_ptr<Segment> seg = Segment::open(segment, nranks, why);
  if (!seg) {
    *err = ncclSystemError;
    return nullptr;
  }
  Header& h = seg->header();
  uint32_t free_slot = 0;
  if (!h.present[rank].compare_exchange_strong(free_slot, 1)) {
    *err = ncclInvalidUsage;
    *why = "rank " + std::to_string(rank) + " joined this communicator twice";
    // This mapping never counted as a member: do not let its destructor count it as one leaving.
    h.left.fetch_sub(1);
    return nullptr;
  }
  std::shared_ptr<Comm> c(new Comm);
  c->seg_ = std::move(seg);
  c->rank_ = rank;
  c->nranks_ = nranks;
  c->device_ = device;
  c->ready_at_ = (std::chrono::steady_clock::now() + kReadyDelay).time_since_epoch().count();
  if (h.joined.fetch_add(1) + 1 == uint32_t(nranks)) c->seg_->unlink_name();
  c->seg_->ring();
  return c;
}

bool Comm::all_joined() { return seg_->header().joined.load(std::memory_order_acquire) >= uint32_t(nranks_); }

ncclResult_t Comm::state() {
  if (const int e = error_.load()) return static_cast<ncclResult_t>(e);
  if (!all_joined() || std::chrono::steady_clock::now().time_since_epoch().count() < ready_at_.load()) return ncclInProgress;
  return ncclSuccess;
}

void Comm::wait_joined() {
  wait_until([&] { return all_joined(); });
  ready_at_ = std::chrono::steady_clock::now().time_since_epoch().count();
}

void Comm::fail(ncclResult_t e) {
  int none = ncclSuccess;
  error_.compare_exchange_strong(none, e);
}

void Comm::abort() {
  aborted_.store(true);
  fail(ncclInvalidUsage);  // a call on an aborted communicator is a use after free in NCCL
  seg_->ring();
}

void Comm::end_call() {
  if (pending_.fetch_sub(1) == 1) {
    std::lock_guard<std::mutex> lk(idle_m_);
    idle_cv_.notify_all();
  }
}

void Comm::wait_idle() {
  std::unique_lock<std::mutex> lk(idle_m_);
  idle_cv_.wait(lk, [&] { return pending_.load() == 0; });
}

bool Comm::stopped() { return aborted_.load() || error_.load() != ncclSuccess || rt::shutting_down(); }

// Sleeps on the clique's bell until `done` holds (true) or the communicator stops (false). The
// bell is read before the condition, so a change made after the check wakes the futex wait.
template <class Pred>
bool Comm::wait_until(Pred done) {
  Header& h = seg_->header();
  for (;;) {
    const uint32_t seen = h.bell.load(std::memory_order_acquire);
    if (done()) return true;
    if (aborted_.load() || rt::shutting_down()) return false;
    seg_->wait_bell(seen, kWaitSliceMs);
  }
}

// A generation barrier over the segment. A rank that dies or never comes leaves the others here
// until they are aborted.
bool Comm::barrier() {
  Header& h = seg_->header();
  const uint32_t phase = h.phase.load(std::memory_order_acquire);
  if (h.arrived.fetch_add(1, std::memory_order_acq_rel) + 1 == uint32_t(nranks_)) {
    h.arrived.store(0, std::memory_order_relaxed);
    h.phase.fetch_add(1, std::memory_order_acq_rel);
    seg_->ring();
    return true;
  }
  return wait_until([&] { return h.phase.load(std::memory_order_acquire) != phase; });
}

void Comm::run(const std::vector<Call>& calls) {
  for (size_t i = 0; i < calls.size();) {
    if (stopped()) return;
    if (!is_p2p(calls[i].kind)) {
      collective(calls[i++]);
      continue;
    }
    size_t j = i;
    while (j < calls.size() && is_p2p(calls[j].kind)) ++j;
    p2p(&calls[i], j - i);
    i = j;
  }
}

void Comm::collective(const Call& c) {
  Header& h = seg_->header();
  const int me = rank_, n = nranks_;
  const size_t esz = dtype_size(c.dtype);
  const bool reduces = c.kind == Kind::AllReduce || c.kind == Kind::ReduceScatter;
  h.desc[me] = OpDesc{static_cast<uint32_t>(c.kind),
                      static_cast<uint32_t>(c.dtype),
                      reduces ? static_cast<uint32_t>(c.op) : 0u,
                      c.kind == Kind::Broadcast ? static_cast<uint32_t>(c.peer) : 0u,
                      c.count,
                      c.seq};
  // Elements per round: a reduce-scatter stages one block per destination rank.
  const size_t per_round = c.kind == Kind::ReduceScatter ? kSlotBytes / (esz * size_t(n)) : kSlotBytes / esz;
  const auto* send = static_cast<const unsigned char*>(c.send);
  auto* recv = static_cast<unsigned char*>(c.recv);
  std::vector<const void*> from(n);
  bool first = true;
  for (size_t off = 0; off < c.count;) {
    const size_t len = std::min(per_round, c.count - off);
    const size_t bytes = len * esz;
    unsigned char* mine = seg_->slot(me);
    switch (c.kind) {
      case Kind::AllReduce:
      case Kind::AllGather:
        std::memcpy(mine, send + off * esz, bytes);
        break;
      case Kind::Broadcast:
        if (me == c.peer) std::memcpy(mine, send + off * esz, bytes);
        break;
      case Kind::ReduceScatter:
        for (int j = 0; j < n; ++j) std::memcpy(mine + size_t(j) * bytes, send + (size_t(j) * c.count + off) * esz, bytes);
        break;
      default:
        break;
    }
    if (!barrier()) return;
    if (first) {
      first = false;
      bool agree = true;
      for (int r = 0; r < n; ++r) {
        const OpDesc& d = h.desc[r];
        agree = agree && d.kind == h.desc[0].kind && d.dtype == h.desc[0].dtype && d.op == h.desc[0].op &&
                d.root == h.desc[0].root && d.count == h.desc[0].count;
      }
      if (!agree) {
        // Every rank sees the same descriptions, so all of them take this branch together.
        fail(ncclInvalidUsage);
        barrier();
        return;
      }
    }
    // Each rank writes only its own output; in place, this round's input is already in the slot.
    switch (c.kind) {
      case Kind::AllReduce:
        for (int r = 0; r < n; ++r) from[r] = seg_->slot(r);
        reduce(c.dtype, c.op, from.data(), n, len, recv + off * esz);
        break;
      case Kind::Broadcast:
        std::memcpy(recv + off * esz, seg_->slot(c.peer), bytes);
        break;
      case Kind::AllGather:
        for (int r = 0; r < n; ++r) std::memcpy(recv + (size_t(r) * c.count + off) * esz, seg_->slot(r), bytes);
        break;
      case Kind::ReduceScatter:
        for (int r = 0; r < n; ++r) from[r] = seg_->slot(r) + size_t(me) * bytes;
        reduce(c.dtype, c.op, from.data(), n, len, recv + off * esz);
        break;
      default:
        break;
    }
    if (!barrier()) return;
    off += len;
  }
}

// Sends and recvs of one batch, progressed together: each pass moves whatever chunk can move
// (a send into an empty mailbox, a recv out of a full one), then sleeps on the bell if nothing
// could. Calls on the same mailbox go in the order they were made.
void Comm::p2p(const Call* calls, size_t n) {
  struct Transfer {
    Mailbox* box;
    unsigned char* data;
    size_t bytes, done = 0;
    size_t expect = 0;  // a recv: the sender's message size, known at its first chunk
    bool started = false, drain = false, finished = false;
  };
  std::vector<Transfer> ts(n);
  for (size_t i = 0; i < n; ++i) {
    const Call& c = calls[i];
    const bool send = c.kind == Kind::Send;
    ts[i].box = send ? &seg_->mailbox(rank_, c.peer) : &seg_->mailbox(c.peer, rank_);
    ts[i].data = send ? seg_->mailbox_data(rank_, c.peer) : seg_->mailbox_data(c.peer, rank_);
    ts[i].bytes = c.count * dtype_size(c.dtype);
  }
  Header& h = seg_->header();
  for (;;) {
    const uint32_t seen = h.bell.load(std::memory_order_acquire);
    bool moved = false, all = true;
    for (size_t i = 0; i < n; ++i) {
      Transfer& t = ts[i];
      if (t.finished) continue;
      all = false;
      bool earlier = false;  // an unfinished earlier call on this mailbox goes first
      for (size_t k = 0; k < i && !earlier; ++k) earlier = !ts[k].finished && ts[k].box == t.box;
      if (earlier) continue;
      Mailbox& mb = *t.box;
      const Call& c = calls[i];
      if (c.kind == Kind::Send) {
        if (mb.full.load(std::memory_order_acquire) != 0) continue;
        const size_t len = std::min(kMailboxBytes, t.bytes - t.done);
        std::memcpy(t.data, static_cast<const unsigned char*>(c.send) + t.done, len);
        mb.total = t.bytes;
        mb.chunk = len;
        mb.dtype = static_cast<uint32_t>(c.dtype);
        mb.full.store(1, std::memory_order_release);
        t.done += len;
        t.finished = t.done == t.bytes;
        moved = true;
      } else {
        if (mb.full.load(std::memory_order_acquire) != 1) continue;
        if (!t.started) {
          t.started = true;
          t.expect = mb.total;
          // A recv that does not match its send: drain the message (so the sender completes),
          // leave the buffer alone, and fail this rank's communicator.
          if (t.expect != t.bytes || mb.dtype != uint32_t(c.dtype)) t.drain = true;
        }
        const size_t len = mb.chunk;
        if (!t.drain) std::memcpy(static_cast<unsigned char*>(c.recv) + t.done, t.data, len);
        t.done += len;
        mb.full.store(0, std::memory_order_release);
        t.finished = t.done >= t.expect;
        moved = true;
      }
    }
    if (moved) {
      seg_->ring();
      continue;
    }
    if (all) break;
    if (aborted_.load() || rt::shutting_down()) return;
    seg_->wait_bell(seen, kWaitSliceMs);
  }
  for (const Transfer& t : ts)
    if (t.drain) fail(ncclInvalidUsage);
}

}  // namespace sim::nccl
