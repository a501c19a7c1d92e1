#include "local_group.h"
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include "../context.h"
#include "../stream_failure.h"
#include "../cpu/threadpool.h"
#include "reduce.h"

namespace flock::dist {
namespace {

using Clock = std::chrono::steady_clock;

enum class Kind : uint8_t { AllReduce, Broadcast, AllGather, ReduceScatter, Reduce, Barrier };
constexpr const char* kKindNames[] = {"allReduce", "broadcast", "allGather", "reduceScatter", "reduce", "barrier"};
constexpr int kPhases = 2;  // 0: every device has posted; 1: every device has done its share

// One device's side of a collective.
struct Post {
  Kind kind = Kind::Barrier;
  ReduceOp op = ReduceOp::Sum;
  int root = 0;
  Tensor in, out;                      // in-place collectives use `in` only
  std::optional<StreamError> failure;  // posted by a failed stream (stream_failure.h)
};

// One collective: the n-th call on every group.
struct Round {
  uint64_t seq = 0;
  std::vector<Post> posts;
  std::vector<std::array<bool, kPhases>> reached;  // [member][phase]
  std::array<int, kPhases> count{};
  int inner = 0;                     // allReduce/reduce: members done reducing their slice
  std::optional<StreamError> error;  // fails every member (mismatch, out of memory, timeout)
  std::unique_ptr<char[]> scratch;   // the reduction, for allReduce and reduce
  int handed_out = 0;                // members that took this round from the clique
  int failed_member = -1;            // the lowest member whose post came from a failed stream
};

// Near-equal slices of n elements, the first n % k one longer: member m reduces slice m.
std::pair<size_t, size_t> slice(size_t n, int k, int m) {
  const size_t base = n / k, extra = n % k;
  const size_t len = base + (static_cast<size_t>(m) < extra ? 1 : 0);
  const size_t off = m * base + std::min<size_t>(m, extra);
  return {off, len};
}

constexpr int64_t kGrain = 1 << 15;

// dst[i] = in_0[i] (op) in_1[i] (op) ... for i in [off, off + len), in the same member order on
// every device so every device ends with the same bits; avg divides once at the end.
void reduce_slice(char* dst, const std::vector<const char*>& srcs, size_t off, size_t len, DType t, ReduceOp op) {
  const size_t es = dtype_size(t);
  const double scale = 1.0 / static_cast<double>(srcs.size());
  cpu::parallel_for(static_cast<int64_t>(len), kGrain, [&](int64_t b, int64_t e) {
    const size_t o = (off + b) * es, n = static_cast<size_t>(e - b);
    std::memcpy(dst + o, srcs[0] + o, n * es);
    for (size_t j = 1; j < srcs.size(); ++j) reduce_into(dst + o, srcs[j] + o, n, t, op);
    if (op == ReduceOp::Avg) scale_into(dst + o, n, t, scale);
  });
}

void parallel_copy(char* dst, const char* src, size_t bytes) {
  cpu::parallel_for(static_cast<int64_t>(bytes), kGrain * 8,
                    [&](int64_t b, int64_t e) { std::memcpy(dst + b, src + b, static_cast<size_t>(e - b)); });
}

std::string describe_post(const Post& p) {
  std::string s = kKindNames[static_cast<int>(p.kind)];
  if (p.kind == Kind::Barrier) return s;
  s += "(" + std::string(dtype_name(p.in.dtype)) + ", " + std::to_string(p.in.numel()) + " elements";
  if (p.kind == Kind::AllReduce || p.kind == Kind::ReduceScatter || p.kind == Kind::Reduce)
    s += ", op " + std::string(kReduceOpNames[static_cast<int>(p.op)]);
  if (p.kind == Kind::Broadcast || p.kind == Kind::Reduce) s += ", root " + std::to_string(p.root);
  return s + ")";
}

class Clique {
 public:
  explicit Clique(std::vector<Device> devices) : devices_(std::move(devices)), next_(devices_.size(), 0) {
    name_ = "local group [";
    for (size_t i = 0; i < devices_.size(); ++i) name_ += (i ? ", " : "") + devices_[i].str();
    name_ += "]";
  }
  int size() const { return static_cast<int>(devices_.size()); }
  Device device(int m) const { return devices_[m]; }
  const std::string& name() const { return name_; }

  // The next round of member `m`, in call order (JS thread).
  std::shared_ptr<Round> next_round(int m) {
    std::lock_guard<std::mutex> lk(m_);
    const uint64_t seq = next_[m]++;
    auto& r = rounds_[seq];
    if (!r) {
      r = std::make_shared<Round>();
      r->seq = seq;
      r->posts.resize(devices_.size());
      r->reached.resize(devices_.size(), {false, false});
    }
    auto out = r;
    if (++r->handed_out == size()) rounds_.erase(seq);
    return out;
  }

  // Runs member `m`'s side of `round` on its device's stream thread; returns the error, if any.
  std::optional<StreamError> run(int m, Round& round, Post post, int timeout_ms) {
    const char* op = kKindNames[static_cast<int>(post.kind)];
    {
      std::unique_lock<std::mutex> lk(m_);
      round.posts[m] = std::move(post);
      if (auto err = arrive(lk, round, m, 0, op, timeout_ms)) return err;
    }
    // A member posted from a failed stream: no member moves any data (every target keeps what it
    // held), and every member fails, its own error or ERR_PEER_FAILED; the clique stays usable.
    if (round.failed_member >= 0) {
      const Post& mine = round.posts[m];
      if (mine.failure)
        return StreamError{mine.failure->code,
                           std::string(op) + " on " + devices_[m].str() + ": not applied: " + mine.failure->message,
                           mine.failure->ack};
      const Post& theirs = round.posts[round.failed_member];
      return StreamError{Code::PeerFailed, std::string(op) + " on " + name_ + ": " + devices_[round.failed_member].str() +
                                               " failed earlier: " + theirs.failure->message +
                                               "; no device applies collective #" + std::to_string(round.seq)};
    }
    std::optional<StreamError> err = work(m, round);
    std::unique_lock<std::mutex> lk(m_);
    if (err) {
      // The others must not wait for a share that will never come.
      if (!round.error) round.error = err;
      cv_.notify_all();
      return err;
    }
    return arrive(lk, round, m, 1, op, timeout_ms);
  }

  void abort(const std::string& why) {
    {
      std::lock_guard<std::mutex> lk(m_);
      if (!broken_) broken_ = StreamError{Code::PeerLost, name_ + ": " + why};
    }
    cv_.notify_all();
  }

 private:
  // Counts member `m` into `phase` and waits for the others, at most timeout_ms. The last to
  // arrive at phase 0 checks that the posts match and sets up the round.
  std::optional<StreamError> arrive(std::unique_lock<std::mutex>& lk, Round& round, int m, int phase, const char* op,
                                    int timeout_ms) {
    if (broken_) return broken_;
    if (round.error) return round.error;
    round.reached[m][phase] = true;
    if (++round.count[phase] == size()) {
      if (phase == 0) prepare(round);
      cv_.notify_all();
      return round.error;
    }
    const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    const bool met = cv_.wait_until(lk, deadline, [&] { return round.count[phase] == size() || round.error || broken_; });
    if (broken_) return broken_;
    if (round.error) return round.error;
    if (met) return std::nullopt;
    std::string missing;
    for (int k = 0; k < size(); ++k)
      if (!round.reached[k][phase]) missing += (missing.empty() ? "" : ", ") + devices_[k].str();
    std::string msg = std::string(op) + " on " + name_ + ": " + missing +
                      (phase == 0 ? " did not post collective #" : " did not finish its share of collective #") +
                      std::to_string(round.seq) + " within " + std::to_string(timeout_ms) + " ms" +
                      (phase == 0 ? " (never called, or its stream is still busy with earlier work)" : "");
    round.error = StreamError{Code::Timeout, msg};
    // The clique fails together: a device that posts later would otherwise wait for peers that gave up.
    broken_ = StreamError{Code::Timeout, msg + "; the group is unusable from now on"};
    cv_.notify_all();
    return round.error;
  }

  // With m_ held, once every member has posted: the posts must describe one collective.
  void prepare(Round& round) {
    for (int k = 0; k < size() && round.failed_member < 0; ++k)
      if (round.posts[k].failure) round.failed_member = k;
    const Post& p0 = round.posts[0];
    for (int k = 1; k < size(); ++k) {
      const Post& p = round.posts[k];
      bool same = p.kind == p0.kind;
      if (same && p.kind != Kind::Barrier) {
        same = p.in.dtype == p0.in.dtype && p.in.numel() == p0.in.numel();
        if (p.kind == Kind::AllReduce || p.kind == Kind::ReduceScatter || p.kind == Kind::Reduce) same = same && p.op == p0.op;
        if (p.kind == Kind::Broadcast || p.kind == Kind::Reduce) same = same && p.root == p0.root;
      }
      if (!same) {
        round.error =
            StreamError{Code::CollectiveMismatch, "collective mismatch on " + name_ + ": " + devices_[0].str() + " called " +
                                                      describe_post(p0) + " as collective #" + std::to_string(round.seq) + ", " +
                                                      devices_[k].str() + " called " + describe_post(p)};
        return;
      }
    }
    if (p0.kind == Kind::AllReduce || p0.kind == Kind::Reduce) {
      try {
        round.scratch.reset(new char[std::max<size_t>(1, p0.in.nbytes())]);
      } catch (const std::bad_alloc&) {
        round.error = StreamError{Code::OOM, std::string(kKindNames[static_cast<int>(p0.kind)]) + " on " + name_ +
                                                 ": out of memory for " + std::to_string(p0.in.nbytes()) + " bytes of scratch"};
      }
    }
  }

  // Member m's share of the data movement, between the two rendezvous (no lock held: the posts
  // and the scratch do not change until every member has passed phase 1).
  std::optional<StreamError> work(int m, Round& round) {
    const Post& mine = round.posts[m];
    const int k = size();
    try {
      switch (mine.kind) {
        case Kind::Barrier:
          break;
        case Kind::AllReduce:
        case Kind::Reduce: {
          std::vector<const char*> srcs;
          for (const Post& p : round.posts) srcs.push_back(static_cast<const char*>(p.in.raw()));
          const auto [off, len] = slice(static_cast<size_t>(mine.in.numel()), k, m);
          reduce_slice(round.scratch.get(), srcs, off, len, mine.in.dtype, mine.op);
          // Every slice must be reduced before any member overwrites its input with the result.
          std::unique_lock<std::mutex> lk(m_);
          if (auto err = arrive_inner(lk, round)) return err;
          lk.unlock();
          if (mine.kind == Kind::AllReduce || mine.root == m)
            parallel_copy(static_cast<char*>(mine.in.raw()), round.scratch.get(), mine.in.nbytes());
          break;
        }
        case Kind::Broadcast:
          if (m != mine.root)
            parallel_copy(static_cast<char*>(mine.in.raw()), static_cast<const char*>(round.posts[mine.root].in.raw()),
                          mine.in.nbytes());
          break;
        case Kind::AllGather: {
          char* dst = static_cast<char*>(mine.out.raw());
          const size_t block = mine.in.nbytes();
          for (int j = 0; j < k; ++j) parallel_copy(dst + j * block, static_cast<const char*>(round.posts[j].in.raw()), block);
          break;
        }
        case Kind::ReduceScatter: {
          const size_t n = static_cast<size_t>(mine.out.numel()), es = dtype_size(mine.in.dtype);
          std::vector<const char*> srcs;
          for (const Post& p : round.posts) srcs.push_back(static_cast<const char*>(p.in.raw()) + m * n * es);
          reduce_slice(static_cast<char*>(mine.out.raw()), srcs, 0, n, mine.in.dtype, mine.op);
          break;
        }
      }
    } catch (const Error& e) {
      return StreamError{e.code, e.what()};
    }
    return std::nullopt;
  }

  // The rendezvous inside allReduce/reduce between reducing and writing back: no deadline, as
  // every member has already posted and only waits on the others' arithmetic.
  std::optional<StreamError> arrive_inner(std::unique_lock<std::mutex>& lk, Round& round) {
    if (++round.inner == size()) {
      cv_.notify_all();
      return std::nullopt;
    }
    cv_.wait(lk, [&] { return round.inner == size() || round.error || broken_; });
    if (round.inner == size()) return std::nullopt;
    return round.error ? round.error : broken_;
  }

  std::vector<Device> devices_;
  std::string name_;
  std::mutex m_;
  std::condition_variable cv_;
  std::map<uint64_t, std::shared_ptr<Round>> rounds_;
  std::vector<uint64_t> next_;
  std::optional<StreamError> broken_;
};

class Member final : public LocalCpuGroup {
 public:
  Member(std::shared_ptr<Clique> c, int rank, int timeout_ms) : clique_(std::move(c)), rank_(rank), timeout_ms_(timeout_ms) {}
  ~Member() override { clique_->abort(device().str() + "'s group was destroyed"); }

  int rank() const override { return rank_; }
  int size() const override { return clique_->size(); }
  const char* backend() const override { return "local"; }
  bool orders_on_device() const override { return true; }

  void allreduce(Tensor t, ReduceOp op, Done done) override {
    check(t, "allReduce");
    check_op(t, op, "allReduce");
    post({Kind::AllReduce, op, 0, t, {}, std::nullopt}, std::move(done));
  }
  void reduce(Tensor t, int root, ReduceOp op, Done done) override {
    check(t, "reduce");
    check_op(t, op, "reduce");
    check_root(root, "reduce");
    post({Kind::Reduce, op, root, t, {}, std::nullopt}, std::move(done));
  }
  void broadcast(Tensor t, int root, Done done) override {
    check(t, "broadcast");
    check_root(root, "broadcast");
    post({Kind::Broadcast, ReduceOp::Sum, root, t, {}, std::nullopt}, std::move(done));
  }
  void allgather(Tensor in, Tensor out, Done done) override {
    check(in, "allGather");
    check(out, "allGather");
    FLOCK_CHECK(in.dtype == out.dtype, DType, "allGather: input is ", dtype_name(in.dtype), " but output is ",
                dtype_name(out.dtype));
    FLOCK_CHECK(out.numel() == in.numel() * size(), Shape, "allGather: output has ", out.numel(), " elements; a group of ",
                size(), " needs ", size(), " x ", in.numel(), " = ", in.numel() * size());
    post({Kind::AllGather, ReduceOp::Sum, 0, in, out, std::nullopt}, std::move(done));
  }
  void reduce_scatter(Tensor in, Tensor out, ReduceOp op, Done done) override {
    check(in, "reduceScatter");
    check(out, "reduceScatter");
    check_op(in, op, "reduceScatter");
    FLOCK_CHECK(in.dtype == out.dtype, DType, "reduceScatter: input is ", dtype_name(in.dtype), " but output is ",
                dtype_name(out.dtype));
    FLOCK_CHECK(in.numel() == out.numel() * size(), Shape, "reduceScatter: input has ", in.numel(), " elements; a group of ",
                size(), " needs ", size(), " x ", out.numel(), " = ", out.numel() * size());
    post({Kind::ReduceScatter, op, 0, in, out, std::nullopt}, std::move(done));
  }
  void send(Tensor, int, Done) override {
    fail(Code::Arg, "send: ", clique_->name(), " has no point-to-point messages; copy with tensor.to('", device().str(), "')");
  }
  void recv(Tensor, int, Done) override {
    fail(Code::Arg, "recv: ", clique_->name(), " has no point-to-point messages; copy with tensor.to('", device().str(), "')");
  }
  void barrier(Done done) override { post({Kind::Barrier, ReduceOp::Sum, 0, {}, {}, std::nullopt}, std::move(done)); }
  void abort(const std::string& why) override { clique_->abort(why); }
  void set_timeout(int timeout_ms) override { timeout_ms_.store(timeout_ms); }

 private:
  Device device() const { return clique_->device(rank_); }

  void check(const Tensor& t, const char* op) const {
    if (t.device() != device())
      fail(Code::Device, op, ": rank ", rank_, " of ", clique_->name(), " takes tensors on ", device().str(), ", got one on ",
           t.device().str());
    FLOCK_CHECK(t.dtype != DType::boolean, DType, op, ": bool tensors are not supported; cast to u8 or i32");
  }
  static void check_op(const Tensor& t, ReduceOp op, const char* name) {
    if (op == ReduceOp::Avg && !is_floating(t.dtype))
      fail(Code::DType, name, ": op 'avg' needs a floating dtype, got ", dtype_name(t.dtype), "; use 'sum' and divide");
  }
  void check_root(int root, const char* op) const {
    FLOCK_CHECK(root >= 0 && root < size(), Index, op, ": root rank ", root, " is outside a group of size ", size());
  }

  // Queues this member's side on its device's stream (JS thread; returns at once).
  void post(Post p, Done done) {
    auto round = clique_->next_round(rank_);
    auto c = clique_;
    const int m = rank_, timeout = timeout_ms_.load();
    const char* op = kKindNames[static_cast<int>(p.kind)];
    // A control task: it runs on a failed stream too, so the other members learn of the failure.
    Context::current().stream(device()).enqueue(
        op,
        [c, round, m, timeout, p = std::move(p), done = std::move(done)]() mutable {
          if (const StreamError* f = current_task_failure())
            p.failure = *f;
          else if (const StreamError* g = p.in.storage ? p.in.storage->failure() : nullptr)
            p.failure = *g;
          std::optional<StreamError> err;
          try {
            err = c->run(m, *round, std::move(p), timeout);
          } catch (const Error& e) {
            err = StreamError{e.code, e.what()};
          } catch (const std::exception& e) {
            err = StreamError{Code::Internal, e.what()};
          }
          // A peer failed: the work queued after this on the device (the step that would use the
          // result) is dropped, as on the failed device itself; the Work rejects once that failure has
          // begun, carrying its acknowledgement.
          if (err && err->code == Code::PeerFailed) {
            const StreamError e = *err;
            on_task_failure([done = std::move(done), e](const StreamError& mark) {
              done(StreamError{e.code, e.message, mark.ack});
            });
            throw Error(e.code, e.message);
          }
          done(std::move(err));
        },
        true);
  }

  std::shared_ptr<Clique> clique_;
  int rank_;
  std::atomic<int> timeout_ms_;
};

}  // namespace

std::vector<std::shared_ptr<LocalCpuGroup>> make_local_cpu_groups(const std::vector<Device>& devices, int timeout_ms) {
  if (devices.empty()) fail(Code::Arg, "initLocalGroups: devices must list at least one CPU device");
  for (size_t i = 0; i < devices.size(); ++i) {
    if (!devices[i].is_cpu())
      fail(Code::Device, "initLocalGroups: ", devices[i].str(),
           " is not a CPU device; CPU and CUDA devices cannot share a local group");
    for (size_t j = 0; j < i; ++j)
      if (devices[j] == devices[i]) fail(Code::Arg, "initLocalGroups: device ", devices[i].str(), " is listed twice");
  }
  auto clique = std::make_shared<Clique>(devices);
  std::vector<std::shared_ptr<LocalCpuGroup>> out;
  for (size_t i = 0; i < devices.size(); ++i) out.push_back(std::make_shared<Member>(clique, static_cast<int>(i), timeout_ms));
  return out;
}

}  // namespace flock::dist
