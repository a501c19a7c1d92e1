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
#include "../stream_failure.h"
#include "hier_group.h"
#include "process_group.h"
#include "reduce.h"
#include "shm_group.h"
#include "socket.h"
#include "tcp_ring.h"

namespace flock::dist {
namespace {

constexpr uint32_t kMagic = 0x666c6b32;  // "flk2": refuses strays that are not our ranks (or speak another version)

int check_rank_in_world(int rank, int size) {
  FLOCK_CHECK(size >= 1 && rank >= 0 && rank < size, Arg, "ring: rank ", rank, " is outside a world of size ", size);
  return rank;
}

class Ring final : public RingGroup, private TcpRing {
 public:
  Ring(int rank, int size, const std::string& host, int timeout_ms, std::string name)
      : TcpRing(check_rank_in_world(rank, size), size, timeout_ms),
        name_(name.empty() ? "this process group" : std::move(name)),
        ctrl_(rank, size) {
    listen_fd_ = tcp_listen(host, &port_, 2 * size + 8);
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

  const char* transport() const override { return shm_ ? "shm" : hier_ ? "shm+tcp" : "tcp"; }

  void connect(std::vector<PeerAddress> peers, std::string shm_name, std::vector<int> host_of, Done done) override {
    FLOCK_CHECK(static_cast<int>(peers.size()) == size_, Arg, "ring: expected ", size_, " peer addresses, got ", peers.size());
    FLOCK_CHECK(host_of.empty() || static_cast<int>(host_of.size()) == size_, Arg, "ring: expected ", size_,
                " host indices, got ", host_of.size());
    // One host after all: the plain shared-memory group.
    if (std::all_of(host_of.begin(), host_of.end(), [&](int h) { return h == host_of[0]; })) host_of.clear();
    run("connect", std::move(done),
        [this, peers = std::move(peers), shm_name = std::move(shm_name), host_of = std::move(host_of)] {
          // Two connections per pair, data (channel 0) and control (1). Dial the higher ranks (their
          // listen backlog takes us before they accept), then accept the lower ones: no ordering
          // between ranks can deadlock.
          for (int r = rank_ + 1; r < size_; ++r)
            for (int32_t channel : {0, 1}) {
              Link l{tcp_connect(peers[r].host, peers[r].port, timeout_ms_, r), r};
              if (channel)
                ctrl_.adopt(r, l.fd);
              else
                links_[r].fd = l.fd;
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
            const bool ours = static_cast<uint32_t>(hello[0]) == kMagic && hello[2] == size_ && hello[1] >= 0 &&
                              hello[1] < rank_ && (hello[3] == 0 || hello[3] == 1);
            const bool fresh = ours && (hello[3] == 1 ? ctrl_.adopt(hello[1], l.fd) : links_[hello[1]].fd < 0);
            if (!fresh) {
              close_fd(l.fd);
              fail(Code::Arg, "ring: a connection on port ", port_, " did not identify as a lower rank of this group");
            }
            if (hello[3] == 0) links_[hello[1]].fd = l.fd;
          }
          // Same host: collectives go through shared memory (shm_group.h); the links stay for the rest.
          // Several hosts: shared memory within each, TCP between them (hier_group.h).
          auto check = [this](int from, const CallHeader& h) {
            theirs_ = h;
            check_call(from);
          };
          if (!shm_name.empty() && size_ > 1 && host_of.empty())
            shm_ = ShmGroup::join(shm_name, rank_, size_, links_, timeout_ms_, check);
          if (!shm_name.empty() && size_ > 1 && !host_of.empty()) {
            std::vector<Link> local;  // this host's ranks' links, this rank's own (no connection) among them
            int me = 0;
            for (int r = 0; r < size_; ++r)
              if (host_of[r] == host_of[rank_]) {
                if (r == rank_) me = static_cast<int>(local.size());
                local.push_back(links_[r]);
              }
            std::unique_ptr<ShmGroup> seg;
            if (local.size() > 1)
              seg = ShmGroup::join(shm_name + "-h" + std::to_string(host_of[rank_]), me, static_cast<int>(local.size()), local,
                                   timeout_ms_, check);
            hier_ = std::make_unique<HierGroup>(rank_, host_of, std::move(seg), *static_cast<TcpSteps*>(this));
          }
          for (auto& l : links_)
            if (l.fd >= 0) set_nonblocking(l.fd);
          close_fd(listen_fd_);
          ctrl_.start();
        });
  }

  void allreduce(Tensor t, ReduceOp op, Done done) override {
    check_cpu(t, "allreduce");
    if (op == ReduceOp::Avg && !is_floating(t.dtype))
      fail(Code::DType, "allreduce: avg needs a floating dtype, got ", dtype_name(t.dtype));
    run(
        "allreduce", std::move(done),
        [this, t, op] {
          const size_t n = static_cast<size_t>(t.numel());
          if (auto* s = shm()) return s->allreduce(mine_, static_cast<char*>(t.raw()), n, t.dtype, op);
          if (auto* s = hier()) return s->allreduce(mine_, static_cast<char*>(t.raw()), n, t.dtype, op);
          ring_allreduce(static_cast<char*>(t.raw()), n, t.dtype, op);
        },
        header(Call::AllReduce, t.dtype, t.numel(), op));
  }

  void reduce_scatter(Tensor in, Tensor out, ReduceOp op, Done done) override {
    check_cpu(in, "reduceScatter");
    check_cpu(out, "reduceScatter");
    FLOCK_CHECK(in.dtype == out.dtype, DType, "reduceScatter: input is ", dtype_name(in.dtype), " but output is ",
                dtype_name(out.dtype));
    FLOCK_CHECK(in.numel() == out.numel() * size_, Shape, "reduceScatter: input has ", in.numel(), " elements; expected ", size_,
                " x output (", out.numel(), ")");
    if (op == ReduceOp::Avg && !is_floating(in.dtype))
      fail(Code::DType, "reduceScatter: avg needs a floating dtype, got ", dtype_name(in.dtype));
    run(
        "reduceScatter", std::move(done),
        [this, in, out, op] {
          const size_t m = static_cast<size_t>(out.numel()), es = esize(in);
          if (auto* s = shm())
            return s->reduce_scatter(mine_, static_cast<const char*>(in.raw()), static_cast<char*>(out.raw()), m, in.dtype, op);
          if (auto* s = hier())
            return s->reduce_scatter(mine_, static_cast<const char*>(in.raw()), static_cast<char*>(out.raw()), m, in.dtype, op);
          std::vector<size_t> off(size_), len(size_, m);
          for (int k = 0; k < size_; ++k) off[k] = k * m;
          std::vector<char> scratch(in.nbytes());  // the input is not ours to overwrite
          if (!scratch.empty()) std::memcpy(scratch.data(), in.raw(), in.nbytes());
          reduce_scatter_steps(scratch.data(), in.dtype, op, off, len);
          if (m) std::memcpy(out.raw(), scratch.data() + off[rank_] * es, m * es);
          if (op == ReduceOp::Avg) scale_into(out.raw(), m, out.dtype, 1.0 / size_);
        },
        header(Call::ReduceScatter, out.dtype, out.numel(), op));
  }

  void allgather(Tensor in, Tensor out, Done done) override {
    check_cpu(in, "allGather");
    check_cpu(out, "allGather");
    FLOCK_CHECK(in.dtype == out.dtype, DType, "allGather: input is ", dtype_name(in.dtype), " but output is ",
                dtype_name(out.dtype));
    FLOCK_CHECK(out.numel() == in.numel() * size_, Shape, "allGather: output has ", out.numel(), " elements; expected ", size_,
                " x input (", in.numel(), ")");
    run(
        "allGather", std::move(done),
        [this, in, out] {
          const size_t m = static_cast<size_t>(in.numel()), es = esize(in);
          if (auto* s = shm())
            return s->allgather(mine_, static_cast<const char*>(in.raw()), static_cast<char*>(out.raw()), m, es);
          if (auto* s = hier())
            return s->allgather(mine_, static_cast<const char*>(in.raw()), static_cast<char*>(out.raw()), m, es);
          std::vector<size_t> off(size_), len(size_, m);
          for (int k = 0; k < size_; ++k) off[k] = k * m;
          char* base = static_cast<char*>(out.raw());
          if (m) std::memmove(base + off[rank_] * es, in.raw(), m * es);
          all_gather_steps(base, es, off, len);
        },
        header(Call::AllGather, in.dtype, in.numel()));
  }

  void broadcast(Tensor t, int root, Done done) override {
    check_cpu(t, "broadcast");
    check_rank(root, "broadcast", "root");
    run(
        "broadcast", std::move(done),
        [this, t, root] {
          if (size_ == 1) return;
          if (auto* s = shm()) return s->broadcast(mine_, static_cast<char*>(t.raw()), t.nbytes(), root);
          if (auto* s = hier()) return s->broadcast(mine_, static_cast<char*>(t.raw()), t.nbytes(), root);
          ring_broadcast(static_cast<char*>(t.raw()), t.nbytes(), root);
        },
        header(Call::Broadcast, t.dtype, t.numel(), ReduceOp::Sum, root));
  }

  void send(Tensor t, int dst, Done done) override {
    check_cpu(t, "send");
    check_rank(dst, "send", "dst");
    run("send", std::move(done), [this, t, dst] {
      CallHeader h = header(Call::Send, t.dtype, t.numel());
      h.seq = ++sends_[dst];
      h.failed = own_ ? 1 : 0;  // the receiver fails too (run())
      h.failed_code = own_ ? static_cast<int32_t>(own_->code) : 0;
      int at = 0;
      if (ShmGroup* s = pipe_to(dst, &at)) {
        s->pipe_write(at, &h, sizeof h);
        return s->pipe_write(at, t.raw(), t.nbytes());
      }
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
      int at = 0;
      ShmGroup* s = pipe_to(src, &at);
      if (s)
        s->pipe_read(at, &got, sizeof got);
      else
        exchange(&links_[src], nullptr, 0, &links_[src], &got, sizeof got, timeout_ms_);
      if (!same_call(got, want)) {
        const bool p2p = is_call(got) && got.call == Call::Send;
        std::string theirs = describe(got, false);
        if (is_call(got))
          theirs += p2p ? " as its message #" + std::to_string(got.seq) + " to rank " + std::to_string(rank_)
                        : " as collective #" + std::to_string(got.seq);
        std::string mine = "recv" + describe(want, false).substr(4) + " from rank " + std::to_string(src);
        if (!p2p || got.seq != want.seq) mine += " as its message #" + std::to_string(want.seq) + " from there";
        fail(Code::CollectiveMismatch, p2p ? "send/recv mismatch on " : "collective mismatch on ", name_, ": rank ", src,
             " called ", theirs, ", rank ", rank_, " called ", mine);
      }
      if (s)
        s->pipe_read(at, t.raw(), t.nbytes());
      else
        exchange(&links_[src], nullptr, 0, &links_[src], t.raw(), t.nbytes(), timeout_ms_);
      if (got.failed) {  // read to the end, so the link stays in step; run() fails the recv
        peer_failed_ = src;
        peer_code_ = got.failed_code;
      }
    });
  }

  void barrier(Done done) override {
    run(
        "barrier", std::move(done),
        [this] {
          if (auto* s = shm()) return s->barrier(mine_);
          if (auto* s = hier()) return s->barrier(mine_);
          ring_barrier();
        },
        header(Call::Barrier, DType::i32, 0));
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
  // The shared-memory group whose pipes reach `peer` (*index: its place there), or null: TCP.
  ShmGroup* pipe_to(int peer, int* index) const {
    *index = peer;
    return shm_ ? shm_.get() : hier_ ? hier_->local(peer, index) : nullptr;
  }
  // The hierarchy when this group spans hosts and shares memory on some (its TCP phases send the
  // header themselves, among the ranks they run on).
  HierGroup* hier() {
    if (hier_) unsent_ = false;
    return hier_.get();
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

  // The header `from` sent (the predecessor's, or a doubling partner's) against this rank's:
  // ERR_COLLECTIVE_MISMATCH naming both calls, lower rank first.
  void check_call(int from) override {
    const CallHeader &mine = mine_, &theirs = theirs_;
    const Link& prev = links_[from];
    if (theirs.failed && (peer_failed_ < 0 || from < peer_failed_)) {
      peer_failed_ = from;
      peer_code_ = theirs.failed_code;
    }
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

  // Queues `body` on the communication thread. After any failure the byte streams between ranks
  // are out of step, so the group aborts (its peers see the connections close and fail fast
  // instead of waiting out their timeouts) and all later work fails with the first error.
  // A collective passes its call header (`call`): it is numbered and checked against the
  // neighbours' before `body` runs. Send, recv and connect pass none (they check their own).
  //
  // A collective posted by a stream that had failed (current_task_failure(), stream_failure.h)
  // says so in its header. Every rank still runs it to its end, so the group stays in step and
  // usable, and then fails it: this rank with its own error, the others with ERR_PEER_FAILED.
  void run(const char* op, Done done, std::function<void()> body, std::optional<CallHeader> call = std::nullopt) {
    std::optional<StreamError> own;
    if (const StreamError* f = current_task_failure()) own = *f;
    comm_.push([this, op, call, own, done = std::move(done), body = std::move(body)] {
      std::optional<StreamError> err;
      {
        std::lock_guard<std::mutex> lk(m_);
        if (failed_)
          err = StreamError{failed_->code, std::string(op) + ": the process group failed earlier: " + failed_->message};
      }
      if (!err) {
        const int64_t seq = call ? ++seq_ : 0;
        if (seq) ctrl_.started(seq);
        peer_failed_ = -1;
        own_ = own;
        try {
          if (call && size_ > 1) {
            mine_ = *call;
            mine_.seq = seq;
            mine_.failed = own ? 1 : 0;
            mine_.failed_code = own ? static_cast<int32_t>(own->code) : 0;
            unsent_ = true;
            // Across hosts the hierarchy's phases see only some headers: there a failed post fails
            // the group as a mismatch would (every rank fails; the group is unusable after).
            if (own && hier_) throw Error(own->code, own->message);
          }
          body();
          agree();  // a collective that moved no data (empty tensors) still checks its call
          if (call && size_ > 2 && !shm_ && !hier_) share_failures();
        } catch (const Error& e) {
          err = StreamError{e.code, e.what()};
        } catch (const std::exception& e) {
          err = StreamError{Code::Internal, e.what()};
        }
        unsent_ = false;
        if (err)
          fail_group(op, seq, &*err);
        else if (own)
          err = StreamError{own->code, std::string(op) + " on rank " + std::to_string(rank_) + ": not applied: " + own->message,
                            own->ack};
        else if (peer_failed_ >= 0)
          err = StreamError{Code::PeerFailed, std::string(op) + " on rank " + std::to_string(rank_) +
                                                  (seq ? " (collective #" + std::to_string(seq) + ")" : std::string()) +
                                                  ": rank " + std::to_string(peer_failed_) + " failed earlier (" +
                                                  code_name(static_cast<Code>(peer_code_)) + "); its data is not applied here"};
      }
      done(std::move(err));
    });
  }

  // The ring sees only its neighbours' headers: after a collective on three or more ranks over
  // TCP, a one-int-per-rank allreduce (max) tells every rank which posted theirs failed. Only
  // there; the shared-memory group reads every header, and two ranks read each other's.
  void share_failures() {
    const int v = vsize();
    std::vector<int32_t> codes(v, 0);
    for (int k = 0; k < v; ++k) {
      if (view_rank(k) == rank_ && mine_.failed) codes[k] = mine_.failed_code + 1;
      if (view_rank(k) == peer_failed_) codes[k] = peer_code_ + 1;
    }
    std::vector<size_t> off(v), len(v, 1);
    for (int k = 0; k < v; ++k) off[k] = k;
    reduce_scatter_steps(reinterpret_cast<char*>(codes.data()), DType::i32, ReduceOp::Max, off, len);
    all_gather_steps(reinterpret_cast<char*>(codes.data()), 4, off, len);
    for (int k = 0; k < v; ++k)
      if (codes[k] > 0 && view_rank(k) != rank_ && (peer_failed_ < 0 || view_rank(k) < peer_failed_)) {
        peer_failed_ = view_rank(k);
        peer_code_ = codes[k] - 1;
      }
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
    if (cause.first_hand)
      ctrl_.report(cause.error);  // before the data connections close below
    else
      ctrl_.failed();
    *err = StreamError{cause.error.code, std::string(op) + " on rank " + std::to_string(rank_) + ": " + cause.error.message};
    {
      std::lock_guard<std::mutex> lk(m_);
      if (aborted_) return;  // destroyed meanwhile: abort() has run
      failed_ = *err;
    }
    abort_links(err->message);
  }

  const std::string name_;  // for messages: "group 1 (ranks 0, 2)"
  int listen_fd_ = -1, port_ = 0;
  std::mutex m_;
  std::optional<StreamError> failed_;
  bool aborted_ = false;
  int64_t seq_ = 0;  // group-wide collectives started; comm thread only
  // The lowest rank whose header said its post had failed (-1: none), and its error code; comm thread only.
  int peer_failed_ = -1;
  int32_t peer_code_ = 0;
  std::optional<StreamError> own_;      // the running job's own failure (run()); comm thread only
  std::vector<int64_t> sends_, recvs_;  // messages sent to / received from each rank; comm thread only
  ControlPlane ctrl_;
  std::unique_ptr<ShmGroup> shm_;    // set by connect when every rank is on this host
  std::unique_ptr<HierGroup> hier_;  // set by connect when the ranks span hosts and share some
  CommThread comm_;                  // last: its thread stops before the links it uses are torn down
};

}  // namespace

std::shared_ptr<RingGroup> RingGroup::listen(int rank, int size, const std::string& bind_host, int timeout_ms, std::string name) {
  return std::make_shared<Ring>(rank, size, bind_host, timeout_ms, std::move(name));
}

}  // namespace flock::dist
