#include "tcp_ring.h"
#include <algorithm>
#include "../error.h"
#include "reduce.h"

namespace flock::dist {
namespace {
constexpr size_t kChunk = size_t(128) << 10;  // pipelining grain and staging size (64 KiB and 256 KiB+ measured slower)
// Up to this size an allreduce on 2, 4, 8... ranks is latency-bound: recursive doubling's fewer,
// larger messages beat the ring's 2(n-1) small ones (measured on loopback, bench/allreduce.ts).
constexpr size_t kDoublingBytes = size_t(256) << 10;
}  // namespace

// Broadcast over the view from view position `root_pos`.
void TcpRing::ring_broadcast(char* p, size_t bytes, int root_pos) {
  agree();
  // A pipeline along the ring starting at root: each rank forwards chunk c-1 while chunk c
  // arrives, so the time is about (bytes + (n-2) chunks) / bandwidth, not n x bytes.
  const int v = vsize(), pos = mod(vpos_ - root_pos, v);
  const Link& next = vlink(1);
  const Link& prev = vlink(-1);
  const size_t chunks = (bytes + kChunk - 1) / kChunk;
  auto span = [&](size_t c) { return std::min(kChunk, bytes - c * kChunk); };
  const bool last = pos == v - 1;
  if (pos == 0) {
    exchange(&next, p, bytes, &next, nullptr, 0, timeout_ms_);
  } else {
    for (size_t c = 0; c <= chunks; ++c) {
      const bool has_send = !last && c > 0, has_recv = c < chunks;
      exchange(&next, has_send ? p + (c - 1) * kChunk : nullptr, has_send ? span(c - 1) : 0, &prev,
               has_recv ? p + c * kChunk : nullptr, has_recv ? span(c) : 0, timeout_ms_);
    }
  }
  // The completion token: from the last rank (which has it all, so every rank on the way
  // passed its header check) once round to the one before it. The root's data alone would let
  // the ranks ahead of a mismatch finish as if nothing were wrong.
  int64_t token = 0;
  if (!last) exchange(&next, nullptr, 0, &prev, &token, sizeof token, timeout_ms_);
  if (pos != v - 2) exchange(&next, &token, sizeof token, &prev, nullptr, 0, timeout_ms_);
}

void TcpRing::reset_view() {
  view_.resize(size_);
  for (int r = 0; r < size_; ++r) view_[r] = r;
  vpos_ = rank_;
  unsent_ = false;
}

// Runs `steps` over `ring` with the running call's header leading them.
void TcpRing::over(const std::vector<int>& ring, const std::function<void()>& steps) {
  view_ = ring;
  vpos_ = static_cast<int>(std::find(ring.begin(), ring.end(), rank_) - ring.begin());
  FLOCK_CHECK(vpos_ < vsize(), Internal, "ring: rank ", rank_, " is not in the sub-ring it runs");
  unsent_ = true;
  try {
    steps();
    agree();
  } catch (...) {
    reset_view();
    throw;
  }
  reset_view();
}

void TcpRing::tcp_allreduce(const std::vector<int>& ring, char* data, size_t n, DType dt, ReduceOp op) {
  over(ring, [&] { ring_allreduce(data, n, dt, op); });
}

void TcpRing::tcp_reduce_scatter(const std::vector<int>& ring, char* base, DType dt, ReduceOp op, const std::vector<size_t>& off,
                                 const std::vector<size_t>& len) {
  over(ring, [&] { reduce_scatter_steps(base, dt, op, off, len); });
}

void TcpRing::tcp_all_gather(const std::vector<int>& ring, char* base, size_t es, const std::vector<size_t>& off,
                             const std::vector<size_t>& len) {
  over(ring, [&] { all_gather_steps(base, es, off, len); });
}

void TcpRing::tcp_broadcast(const std::vector<int>& ring, char* data, size_t bytes, int root_pos) {
  over(ring, [&] { ring_broadcast(data, bytes, root_pos); });
}

void TcpRing::tcp_barrier(const std::vector<int>& ring) {
  over(ring, [&] { ring_barrier(); });
}

// Over the view: recursive doubling for small tensors on 2, 4, 8... ranks, else the ring.
void TcpRing::ring_allreduce(char* data, size_t n, DType dt, ReduceOp op) {
  const int v = vsize();
  const size_t es = dtype_size(dt);
  if (v > 1 && (v & (v - 1)) == 0 && n * es <= kDoublingBytes) return doubling_allreduce(data, n, dt, op);
  std::vector<size_t> off, len;
  split(n, &off, &len);
  reduce_scatter_steps(data, dt, op, off, len);
  if (op == ReduceOp::Avg) scale_into(data + off[vpos_] * es, len[vpos_], dt, 1.0 / v);
  all_gather_steps(data, es, off, len);
}

// A one-element-per-rank allreduce over the view: nobody leaves before everyone has arrived.
void TcpRing::ring_barrier() {
  const int v = vsize();
  std::vector<int32_t> token(v, 1);
  std::vector<size_t> off(v), len(v, 1);
  for (int k = 0; k < v; ++k) off[k] = k;
  reduce_scatter_steps(reinterpret_cast<char*>(token.data()), DType::i32, ReduceOp::Sum, off, len);
  all_gather_steps(reinterpret_cast<char*>(token.data()), 4, off, len);
}

// The header of the collective now running, as the lead of its first exchange from the
// predecessor to the successor, if it has not gone out yet and this is that exchange.
const Lead* TcpRing::take_lead(const Link* out, const Link* in) {
  if (!unsent_ || out != &vlink(1) || in != &vlink(-1)) return nullptr;
  unsent_ = false;
  return &lead_;
}

// The header as a message of its own, for a collective whose first step is not to the successor.
void TcpRing::agree() {
  if (!unsent_) return;
  unsent_ = false;
  exchange(&vlink(1), nullptr, 0, &vlink(-1), nullptr, 0, timeout_ms_, nullptr, &lead_);
}

// Latency-bound sizes on a power-of-two group: recursive doubling, log2(n) exchanges of the
// whole tensor with rank ^ 1, rank ^ 2, ... instead of the ring's 2(n-1) steps. Partners reduce
// the same two operands in the same element order and IEEE addition commutes, so every rank
// ends with identical bits, as with the ring.
//
// Each exchange leads with the call header, checked against the partner's before its data is
// taken: no extra message (a separate round of headers round the ring cost ~0.1 ms at 4 ranks).
// The partners of all steps connect every rank, so a rank whose call differs fails the partner
// of its first step (and itself); the others wait on data that never comes until the control
// connections bring the report, so again no rank completes a mismatched collective.
void TcpRing::doubling_allreduce(char* data, size_t n, DType dt, ReduceOp op) {
  const size_t bytes = n * dtype_size(dt);
  if (n == 0) return;
  std::vector<char> other(bytes);
  unsent_ = false;
  for (int mask = 1; mask < vsize(); mask <<= 1) {
    partner_ = view_[vpos_ ^ mask];
    const Link& peer = links_[partner_];
    exchange(&peer, data, bytes, &peer, other.data(), bytes, timeout_ms_, nullptr, &partner_lead_);
    reduce_into(data, other.data(), n, dt, op);
  }
  if (op == ReduceOp::Avg) scale_into(data, n, dt, 1.0 / vsize());
}

// Near-equal segments, one per rank of the view, the first n % size one element longer.
void TcpRing::split(size_t n, std::vector<size_t>* off, std::vector<size_t>* len) const {
  const size_t v = static_cast<size_t>(vsize());
  off->resize(v);
  len->resize(v);
  size_t o = 0;
  for (size_t k = 0; k < v; ++k) {
    (*len)[k] = n / v + (k < n % v ? 1 : 0);
    (*off)[k] = o;
    o += (*len)[k];
  }
}

// Over the view: after size-1 steps, segment `vpos_` of `base` holds the reduction over all ranks. Received
// bytes land in a one-chunk staging buffer that stays in cache and are folded into `base` as each
// chunk completes (receiving whole segments into a large buffer made every write miss cache).
void TcpRing::reduce_scatter_steps(char* base, DType dt, ReduceOp op, const std::vector<size_t>& off,
                                   const std::vector<size_t>& len) {
  const int v = vsize();
  if (v == 1) return;
  const size_t es = dtype_size(dt);
  const Link& next = vlink(1);
  const Link& prev = vlink(-1);
  if (staging_.empty()) staging_.resize(kChunk);  // kChunk is a multiple of every element size
  char* tmp = staging_.data();
  for (int s = 0; s < v - 1; ++s) {
    const int sk = mod(vpos_ - s - 1, v), rk = mod(vpos_ - s - 2, v);
    char* dst = base + off[rk] * es;
    const size_t bytes = len[rk] * es;
    size_t reduced = 0;  // bytes of this step already folded in
    auto window = [&](size_t got, size_t* room) {
      *room = std::min(reduced + kChunk, bytes) - got;
      return tmp + (got - reduced);
    };
    auto fold = [&](size_t got) {
      if (got != std::min(reduced + kChunk, bytes)) return;
      reduce_into(dst + reduced, tmp, (got - reduced) / es, dt, op);
      reduced = got;
    };
    exchange(&next, base + off[sk] * es, len[sk] * es, &prev, bytes, window, timeout_ms_, fold, take_lead(&next, &prev));
  }
}

// Over the view: starting from each rank owning segment `vpos_`, leaves every segment everywhere.
void TcpRing::all_gather_steps(char* base, size_t es, const std::vector<size_t>& off, const std::vector<size_t>& len) {
  const int v = vsize();
  if (v == 1) return;
  const Link& next = vlink(1);
  const Link& prev = vlink(-1);
  for (int s = 0; s < v - 1; ++s) {
    const int sk = mod(vpos_ - s, v), rk = mod(vpos_ - s - 1, v);
    exchange(&next, base + off[sk] * es, len[sk] * es, &prev, base + off[rk] * es, len[rk] * es, timeout_ms_, nullptr,
             take_lead(&next, &prev));
  }
}

}  // namespace flock::dist
