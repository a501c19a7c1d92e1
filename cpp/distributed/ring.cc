// The `ring` backend: CPU tensors over TCP. Every rank holds a connection to every other (the
// ring uses its two neighbours; send/recv use the direct link), plus an idle control connection
// per pair (control.h) through which a failure is traced to the rank that caused it. Allreduce is
// the bandwidth-optimal ring: reduce-scatter then all-gather, each rank sending 2(n-1)/n of the
// data, with received bytes reduced chunk by chunk while the rest of the step is on the wire.
//
// Every group-wide collective starts with a 32-byte call header (op, dtype, count, root, reduce
// op, sequence number) sent to the ring successor and checked against the predecessor's before
// any of the predecessor's data is taken; a send carries one too, checked by the receiver. Ranks
// that disagree would otherwise read each other's bytes as something else and corrupt every later
// result silently. The header leads the first step's data where that step goes to the successor
// (ring steps), or leads each exchange with a doubling partner (recursive doubling), so it costs no
// extra message there; elsewhere (broadcast) it is
// a message of its own. Around a ring, two different calls differ at two neighbour pairs at least;
// a rank forwards nothing it received before its check has passed, and its result needs data
// forwarded by every rank but its successor (broadcast: a completion token that goes round once),
// so on a mismatch no rank completes the collective: the ranks that saw it report it on the
// control connections, the others learn it from there when their data stops coming.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <sys/socket.h>
#include "call_header.h"
#include "comm_thread.h"
#include "control.h"
#include "process_group.h"
#include "reduce.h"
#include "shm_group.h"
#include "socket.h"

namespace flock::dist {
namespace {

constexpr uint32_t kMagic = 0x666c6b32;  // "flk2": refuses strays that are not our ranks (or speak another version)
constexpr size_t kChunk = size_t(128) << 10;  // pipelining grain and staging size (64 KiB and 256 KiB+ measured slower)
// Up to this size an allreduce on 2, 4, 8... ranks is latency-bound: recursive doubling's fewer,
// larger messages beat the ring's 2(n-1) small ones (measured on loopback, bench/allreduce.ts).
constexpr size_t kDoublingBytes = size_t(256) << 10;
int mod(int a, int n) { return ((a % n) + n) % n; }

int check_rank_in_world(int rank, int size) {
  FLOCK_CHECK(size >= 1 && rank >= 0 && rank < size, Arg, "ring: rank ", rank, " is outside a world of size ", size);
  return rank;
}

class Ring final : public RingGroup {
 public:
  Ring(int rank, int size, const std::string& host, int timeout_ms, std::string name)
      : rank_(rank), size_(size), name_(name.empty() ? "this process group" : std::move(name)), timeout_ms_(timeout_ms),
        ctrl_(check_rank_in_world(rank, size), size) {
    listen_fd_ = tcp_listen(host, &port_, 2 * size + 8);
    links_.resize(size);
    for (int r = 0; r < size; ++r) links_[r].peer = r;
    sends_.resize(size);
    recvs_.resize(size);
  }
  ~Ring() override {
    abort("the process group was destroyed");
    comm_.stop();
    for (auto& l : links_) close_fd(l.fd);
    close_fd(listen_fd_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const char* backend() const override { return "ring"; }
  int port() const override { return port_; }
  void set_timeout(int ms) override { timeout_ms_ = ms; }

  const char* transport() const override { return shm_ ? "shm" : "tcp"; }

  void connect(std::vector<PeerAddress> peers, std::string shm_name, Done done) override {
    FLOCK_CHECK(static_cast<int>(peers.size()) == size_, Arg, "ring: expected ", size_, " peer addresses, got ", peers.size());
    run("connect", std::move(done), [this, peers = std::move(peers), shm_name = std::move(shm_name)] {
      // Two connections per pair, data (channel 0) and control (1). Dial the higher ranks (their
      // listen backlog takes us before they accept), then accept the lower ones: no ordering
      // between ranks can deadlock.
      for (int r = rank_ + 1; r < size_; ++r)
        for (int32_t channel : {0, 1}) {
          Link l{tcp_connect(peers[r].host, peers[r].port, timeout_ms_, r), r};
          if (channel) ctrl_.adopt(r, l.fd);
          else links_[r].fd = l.fd;
          const int32_t hello[4] = {static_cast<int32_t>(kMagic), rank_, size_, channel};
          write_exact(l, hello, sizeof hello, timeout_ms_);
        }
      for (int k = 0; k < 2 * rank_; ++k) {
        Link l{tcp_accept(listen_fd_, timeout_ms_), -1};
        int32_t hello[4];
        try {
          read_exact(l, hello, sizeof hello, timeout_ms_);
        } catch (...) {
          close_fd(l.fd);
          throw;
        }
        const bool ours = static_cast<uint32_t>(hello[0]) == kMagic && hello[2] == size_ && hello[1] >= 0 && hello[1] < rank_ &&
                          (hello[3] == 0 || hello[3] == 1);
        const bool fresh = ours && (hello[3] == 1 ? ctrl_.adopt(hello[1], l.fd) : links_[hello[1]].fd < 0);
        if (!fresh) {
          close_fd(l.fd);
          fail(Code::Arg, "ring: a connection on port ", port_, " did not identify as a lower rank of this group");
        }
        if (hello[3] == 0) links_[hello[1]].fd = l.fd;
      }
      // Same host: collectives go through shared memory (shm_group.h); the links stay for the rest.
      if (!shm_name.empty() && size_ > 1)
        shm_ = ShmGroup::join(shm_name, rank_, size_, links_, timeout_ms_, [this](int from, const CallHeader& h) {
          theirs_ = h;
          check_call(from);
        });
      for (auto& l : links_)
        if (l.fd >= 0) set_nonblocking(l.fd);
      close_fd(listen_fd_);
      ctrl_.start();
    });
  }

  void allreduce(Tensor t, ReduceOp op, Done done) override {
    check_cpu(t, "allreduce");
    if (op == ReduceOp::Avg && !is_floating(t.dtype)) fail(Code::DType, "allreduce: avg needs a floating dtype, got ", dtype_name(t.dtype));
    run("allreduce", std::move(done), [this, t, op] {
      const size_t n = static_cast<size_t>(t.numel());
      if (auto* s = shm()) return s->allreduce(mine_, static_cast<char*>(t.raw()), n, t.dtype, op);
      if (size_ > 1 && (size_ & (size_ - 1)) == 0 && t.nbytes() <= kDoublingBytes) {
        doubling_allreduce(t, op);
        return;
      }
      std::vector<size_t> off, len;
      split(n, &off, &len);
      reduce_scatter_steps(static_cast<char*>(t.raw()), t.dtype, op, off, len);
      if (op == ReduceOp::Avg) scale_into(static_cast<char*>(t.raw()) + off[rank_] * esize(t), len[rank_], t.dtype, 1.0 / size_);
      all_gather_steps(static_cast<char*>(t.raw()), esize(t), off, len);
    }, header(Call::AllReduce, t.dtype, t.numel(), op));
  }

  void reduce_scatter(Tensor in, Tensor out, ReduceOp op, Done done) override {
    check_cpu(in, "reduceScatter");
    check_cpu(out, "reduceScatter");
    FLOCK_CHECK(in.dtype == out.dtype, DType, "reduceScatter: input is ", dtype_name(in.dtype), " but output is ", dtype_name(out.dtype));
    FLOCK_CHECK(in.numel() == out.numel() * size_, Shape, "reduceScatter: input has ", in.numel(), " elements; expected ", size_,
                " x output (", out.numel(), ")");
    if (op == ReduceOp::Avg && !is_floating(in.dtype)) fail(Code::DType, "reduceScatter: avg needs a floating dtype, got ", dtype_name(in.dtype));
    run("reduceScatter", std::move(done), [this, in, out, op] {
      const size_t m = static_cast<size_t>(out.numel()), es = esize(in);
      if (auto* s = shm()) return s->reduce_scatter(mine_, static_cast<const char*>(in.raw()), static_cast<char*>(out.raw()), m, in.dtype, op);
      std::vector<size_t> off(size_), len(size_, m);
      for (int k = 0; k < size_; ++k) off[k] = k * m;
      std::vector<char> scratch(in.nbytes());  // the input is not ours to overwrite
      if (!scratch.empty()) std::memcpy(scratch.data(), in.raw(), in.nbytes());
      reduce_scatter_steps(scratch.data(), in.dtype, op, off, len);
      if (m) std::memcpy(out.raw(), scratch.data() + off[rank_] * es, m * es);
      if (op == ReduceOp::Avg) scale_into(out.raw(), m, out.dtype, 1.0 / size_);
    }, header(Call::ReduceScatter, out.dtype, out.numel(), op));
  }

  void allgather(Tensor in, Tensor out, Done done) override {
    check_cpu(in, "allGather");
    check_cpu(out, "allGather");
    FLOCK_CHECK(in.dtype == out.dtype, DType, "allGather: input is ", dtype_name(in.dtype), " but output is ", dtype_name(out.dtype));
    FLOCK_CHECK(out.numel() == in.numel() * size_, Shape, "allGather: output has ", out.numel(), " elements; expected ", size_,
                " x input (", in.numel(), ")");
    run("allGather", std::move(done), [this, in, out] {
      const size_t m = static_cast<size_t>(in.numel()), es = esize(in);
      if (auto* s = shm()) return s->allgather(mine_, static_cast<const char*>(in.raw()), static_cast<char*>(out.raw()), m, es);
      std::vector<size_t> off(size_), len(size_, m);
      for (int k = 0; k < size_; ++k) off[k] = k * m;
      char* base = static_cast<char*>(out.raw());
      if (m) std::memmove(base + off[rank_] * es, in.raw(), m * es);
      all_gather_steps(base, es, off, len);
    }, header(Call::AllGather, in.dtype, in.numel()));
  }

  void broadcast(Tensor t, int root, Done done) override {
    check_cpu(t, "broadcast");
    check_rank(root, "broadcast", "root");
    run("broadcast", std::move(done), [this, t, root] {
      if (size_ == 1) return;
      if (auto* s = shm()) return s->broadcast(mine_, static_cast<char*>(t.raw()), t.nbytes(), root);
      agree();
      // A pipeline along the ring starting at root: each rank forwards chunk c-1 while chunk c
      // arrives, so the time is about (bytes + (n-2) chunks) / bandwidth, not n x bytes.
      const int pos = mod(rank_ - root, size_);
      const Link& next = links_[mod(rank_ + 1, size_)];
      const Link& prev = links_[mod(rank_ - 1, size_)];
      char* p = static_cast<char*>(t.raw());
      const size_t bytes = t.nbytes(), chunks = (bytes + kChunk - 1) / kChunk;
      auto span = [&](size_t c) { return std::min(kChunk, bytes - c * kChunk); };
      const bool last = pos == size_ - 1;
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
      if (pos != size_ - 2) exchange(&next, &token, sizeof token, &prev, nullptr, 0, timeout_ms_);
    }, header(Call::Broadcast, t.dtype, t.numel(), ReduceOp::Sum, root));
  }

  void send(Tensor t, int dst, Done done) override {
    check_cpu(t, "send");
    check_rank(dst, "send", "dst");
    run("send", std::move(done), [this, t, dst] {
      CallHeader h = header(Call::Send, t.dtype, t.numel());
      h.seq = ++sends_[dst];
      exchange(&links_[dst], &h, sizeof h, &links_[dst], nullptr, 0, timeout_ms_);
      exchange(&links_[dst], t.raw(), t.nbytes(), &links_[dst], nullptr, 0, timeout_ms_);
    });
  }

  void recv(Tensor t, int src, Done done) override {
    check_cpu(t, "recv");
    check_rank(src, "recv", "src");
    run("recv", std::move(done), [this, t, src] {
      CallHeader want = header(Call::Send, t.dtype, t.numel()), got;
      want.seq = ++recvs_[src];
      exchange(&links_[src], nullptr, 0, &links_[src], &got, sizeof got, timeout_ms_);
      if (!same_call(got, want)) {
        const bool p2p = is_call(got) && got.call == Call::Send;
        std::string theirs = describe(got, false);
        if (is_call(got)) theirs += p2p ? " as its message #" + std::to_string(got.seq) + " to rank " + std::to_string(rank_) : " as collective #" + std::to_string(got.seq);
        std::string mine = "recv" + describe(want, false).substr(4) + " from rank " + std::to_string(src);
        if (!p2p || got.seq != want.seq) mine += " as its message #" + std::to_string(want.seq) + " from there";
        fail(Code::CollectiveMismatch, p2p ? "send/recv mismatch on " : "collective mismatch on ", name_, ": rank ", src, " called ", theirs,
             ", rank ", rank_, " called ", mine);
      }
      exchange(&links_[src], nullptr, 0, &links_[src], t.raw(), t.nbytes(), timeout_ms_);
    });
  }

  void barrier(Done done) override {
    run("barrier", std::move(done), [this] {
      if (auto* s = shm()) return s->barrier(mine_);
      // A one-element-per-rank allreduce: nobody leaves before everyone has arrived.
      std::vector<int32_t> token(size_, 1);
      std::vector<size_t> off(size_), len(size_, 1);
      for (int k = 0; k < size_; ++k) off[k] = k;
      reduce_scatter_steps(reinterpret_cast<char*>(token.data()), DType::i32, ReduceOp::Sum, off, len);
      all_gather_steps(reinterpret_cast<char*>(token.data()), 4, off, len);
    }, header(Call::Barrier, DType::i32, 0));
  }

  // Destruction (or pgDestroy): peers are told this rank leaves on purpose before its
  // connections close, so they do not take it for a crash.
  void abort(const std::string& why) override {
    ctrl_.goodbye();
    abort_links(why);
  }

 private:
  static size_t esize(const Tensor& t) { return dtype_size(t.dtype); }
  // The shared-memory transport when this group uses it (the header then travels through it).
  ShmGroup* shm() {
    if (shm_) unsent_ = false;
    return shm_.get();
  }

  static CallHeader header(Call call, DType dt, int64_t count, ReduceOp op = ReduceOp::Sum, int root = 0) {
    CallHeader h;
    h.call = call;
    h.dtype = static_cast<uint8_t>(dt);
    h.reduce = static_cast<uint8_t>(op);
    h.root = root;
    h.count = count;
    return h;
  }

  // The header of the collective now running, as the lead of its first exchange from the
  // predecessor to the successor, if it has not gone out yet and this is that exchange.
  const Lead* take_lead(const Link* out, const Link* in) {
    if (!unsent_ || out != &links_[mod(rank_ + 1, size_)] || in != &links_[mod(rank_ - 1, size_)]) return nullptr;
    unsent_ = false;
    return &lead_;
  }

  // The header as a message of its own, for a collective whose first step is not to the successor.
  void agree() {
    if (!unsent_) return;
    unsent_ = false;
    exchange(&links_[mod(rank_ + 1, size_)], nullptr, 0, &links_[mod(rank_ - 1, size_)], nullptr, 0, timeout_ms_, nullptr, &lead_);
  }

  // The header `from` sent (the predecessor's, or a doubling partner's) against this rank's:
  // ERR_COLLECTIVE_MISMATCH naming both calls, lower rank first.
  void check_call(int from) const {
    const CallHeader &mine = mine_, &theirs = theirs_;
    const Link& prev = links_[from];
    if (same_call(mine, theirs)) return;
    const bool reduce = is_call(theirs) && theirs.reduce != mine.reduce;
    auto text = [&](int r, const CallHeader& h, bool numbered) {
      std::string s = "rank " + std::to_string(r) + " called " + describe(h, reduce);
      if (!is_call(h)) return s;
      if (h.call == Call::Send) return s + " as its message #" + std::to_string(h.seq) + " to rank " + std::to_string(rank_);
      return numbered ? s + " as collective #" + std::to_string(h.seq) : s;
    };
    const bool renumber = theirs.seq != mine.seq || !is_call(theirs) || theirs.call == Call::Send;
    const std::string a = prev.peer < rank_ ? text(prev.peer, theirs, true) : text(rank_, mine, true);
    const std::string b = prev.peer < rank_ ? text(rank_, mine, renumber) : text(prev.peer, theirs, renumber);
    fail(Code::CollectiveMismatch, "collective mismatch on ", name_, ": ", a, ", ", b);
  }

  void check_cpu(const Tensor& t, const char* op) const {
    FLOCK_CHECK(t.device().is_cpu(), Device, op, ": the ring backend takes CPU tensors, got one on ", t.device().str(),
                " (use the nccl backend for GPUs)");
    FLOCK_CHECK(t.dtype != DType::boolean, DType, op, ": bool tensors are not supported; cast to u8 or i32");
  }
  void check_rank(int r, const char* op, const char* name) const {
    FLOCK_CHECK(r >= 0 && r < size_, Index, op, ": ", name, " rank ", r, " is outside a group of size ", size_);
    FLOCK_CHECK(std::string(name) == "root" || r != rank_, Arg, op, ": ", name, " is this rank (", r, ")");
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
  void doubling_allreduce(const Tensor& t, ReduceOp op) {
    const size_t n = static_cast<size_t>(t.numel()), bytes = t.nbytes();
    if (n == 0) return;
    std::vector<char> other(bytes);
    char* data = static_cast<char*>(t.raw());
    unsent_ = false;
    for (int mask = 1; mask < size_; mask <<= 1) {
      partner_ = rank_ ^ mask;
      const Link& peer = links_[partner_];
      exchange(&peer, data, bytes, &peer, other.data(), bytes, timeout_ms_, nullptr, &partner_lead_);
      reduce_into(data, other.data(), n, t.dtype, op);
    }
    if (op == ReduceOp::Avg) scale_into(data, n, t.dtype, 1.0 / size_);
  }

  // Near-equal segments, the first n % size one element longer.
  void split(size_t n, std::vector<size_t>* off, std::vector<size_t>* len) const {
    off->resize(size_);
    len->resize(size_);
    size_t o = 0;
    for (int k = 0; k < size_; ++k) {
      (*len)[k] = n / size_ + (static_cast<size_t>(k) < n % size_ ? 1 : 0);
      (*off)[k] = o;
      o += (*len)[k];
    }
  }

  // After size-1 steps, segment `rank` of `base` holds the reduction over all ranks. Received
  // bytes land in a one-chunk staging buffer that stays in cache and are folded into `base` as each
  // chunk completes (receiving whole segments into a large buffer made every write miss cache).
  void reduce_scatter_steps(char* base, DType dt, ReduceOp op, const std::vector<size_t>& off, const std::vector<size_t>& len) {
    if (size_ == 1) return;
    const size_t es = dtype_size(dt);
    const Link& next = links_[mod(rank_ + 1, size_)];
    const Link& prev = links_[mod(rank_ - 1, size_)];
    if (staging_.empty()) staging_.resize(kChunk);  // kChunk is a multiple of every element size
    char* tmp = staging_.data();
    for (int s = 0; s < size_ - 1; ++s) {
      const int sk = mod(rank_ - s - 1, size_), rk = mod(rank_ - s - 2, size_);
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

  // Starting from each rank owning segment `rank`, leaves every segment everywhere.
  void all_gather_steps(char* base, size_t es, const std::vector<size_t>& off, const std::vector<size_t>& len) {
    if (size_ == 1) return;
    const Link& next = links_[mod(rank_ + 1, size_)];
    const Link& prev = links_[mod(rank_ - 1, size_)];
    for (int s = 0; s < size_ - 1; ++s) {
      const int sk = mod(rank_ - s, size_), rk = mod(rank_ - s - 1, size_);
      exchange(&next, base + off[sk] * es, len[sk] * es, &prev, base + off[rk] * es, len[rk] * es, timeout_ms_, nullptr, take_lead(&next, &prev));
    }
  }

  // Queues `body` on the communication thread. After any failure the byte streams between ranks
  // are out of step, so the group aborts (its peers see the connections close and fail fast
  // instead of waiting out their timeouts) and all later work fails with the first error.
  // A collective passes its call header (`call`): it is numbered and checked against the
  // neighbours' before `body` runs. Send, recv and connect pass none (they check their own).
  void run(const char* op, Done done, std::function<void()> body, std::optional<CallHeader> call = std::nullopt) {
    comm_.push([this, op, call, done = std::move(done), body = std::move(body)] {
      std::optional<StreamError> err;
      {
        std::lock_guard<std::mutex> lk(m_);
        if (failed_) err = StreamError{failed_->code, std::string(op) + ": the process group failed earlier: " + failed_->message};
      }
      if (!err) {
        const int64_t seq = call ? ++seq_ : 0;
        if (seq) ctrl_.started(seq);
        try {
          if (call && size_ > 1) {
            mine_ = *call;
            mine_.seq = seq;
            unsent_ = true;
          }
          body();
          agree();  // a collective that moved no data (empty tensors) still checks its call
        } catch (const Error& e) {
          err = StreamError{e.code, e.what()};
        } catch (const std::exception& e) {
          err = StreamError{Code::Internal, e.what()};
        }
        unsent_ = false;
        if (err) fail_group(op, seq, &*err);
      }
      done(std::move(err));
    });
  }

  // After a failure here the byte streams between ranks are out of step. Unless the group was
  // already aborted, find the cause (a lost rank, a rank that never joined, another rank's
  // report), tell the other ranks when this rank saw it first, then abort. `err` comes back
  // prefixed with the operation and rank.
  void abort_links(const std::string& why) {
    std::lock_guard<std::mutex> lk(m_);
    if (!failed_) failed_ = StreamError{Code::PeerLost, why};
    aborted_ = true;
    // shutdown (not close) wakes a poll in progress on the communication thread safely.
    for (auto& l : links_)
      if (l.fd >= 0) ::shutdown(l.fd, SHUT_RDWR);
  }

  void fail_group(const char* op, int64_t seq, StreamError* err) {
    {
      std::lock_guard<std::mutex> lk(m_);
      if (aborted_) {
        *err = StreamError{failed_->code, std::string(op) + ": " + failed_->message};
        return;
      }
    }
    ControlPlane::Cause cause{*err, true};
    if (err->code == Code::PeerLost || err->code == Code::Timeout) cause = ctrl_.explain(*err, seq, op, timeout_ms_);
    if (cause.first_hand) ctrl_.report(cause.error);  // before the data connections close below
    *err = StreamError{cause.error.code, std::string(op) + " on rank " + std::to_string(rank_) + ": " + cause.error.message};
    {
      std::lock_guard<std::mutex> lk(m_);
      if (aborted_) return;  // destroyed meanwhile: abort() has run
      failed_ = *err;
    }
    abort_links(err->message);
  }

  const int rank_, size_;
  const std::string name_;  // for messages: "group 1 (ranks 0, 2)"
  std::atomic<int> timeout_ms_;
  int listen_fd_ = -1, port_ = 0;
  std::vector<Link> links_;
  std::vector<char> staging_;  // receive buffer of reduce-scatter steps; comm thread only
  std::mutex m_;
  std::optional<StreamError> failed_;
  bool aborted_ = false;
  int64_t seq_ = 0;  // group-wide collectives started; comm thread only
  std::vector<int64_t> sends_, recvs_;  // messages sent to / received from each rank; comm thread only
  // The running collective's header, the predecessor's, and whether ours has gone out; comm thread only.
  CallHeader mine_, theirs_;
  bool unsent_ = false;
  const Lead lead_{&mine_, &theirs_, sizeof(CallHeader), [this] { check_call(mod(rank_ - 1, size_)); }};
  int partner_ = 0;  // the doubling partner of the exchange under way
  const Lead partner_lead_{&mine_, &theirs_, sizeof(CallHeader), [this] { check_call(partner_); }};
  ControlPlane ctrl_;
  std::unique_ptr<ShmGroup> shm_;  // set by connect when every rank is on this host
  CommThread comm_;  // last: its thread stops before the links it uses are torn down
};

}  // namespace

std::shared_ptr<RingGroup> RingGroup::listen(int rank, int size, const std::string& bind_host, int timeout_ms, std::string name) {
  return std::make_shared<Ring>(rank, size, bind_host, timeout_ms, std::move(name));
}

}  // namespace flock::dist
