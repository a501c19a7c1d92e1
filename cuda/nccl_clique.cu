// The clique: the groups of one process, whose posts are matched into batches and launched
// together on the clique's launcher thread (never the JS thread), and Nccl::issue, the launch.
#include "nccl_group.cuh"

namespace flock::dist::nccl_group {

Clique::Clique(std::vector<int> devices, bool local)
    : devices_(std::move(devices)),
      local_(local),
      members_(devices_.size()),
      queues_(devices_.size()),
      launches_(std::make_shared<LaunchQueue>()) {
  launcher_ = std::thread([q = launches_] {
    for (;;) {
      std::function<void()> job;
      {
        std::unique_lock<std::mutex> lk(q->m);
        q->cv.wait(lk, [&] { return q->stopping || !q->jobs.empty(); });
        if (q->jobs.empty()) return;
        job = std::move(q->jobs.front());
        q->jobs.pop_front();
      }
      job();  // may drop the last group, and with it the clique: only `q` is used after this
    }
  });
}

Clique::~Clique() {
  {
    std::lock_guard<std::mutex> lk(launches_->m);
    launches_->stopping = true;
  }
  launches_->cv.notify_all();
  if (launcher_.get_id() == std::this_thread::get_id())
    launcher_.detach();
  else
    launcher_.join();
}

void Clique::join(int rank, const std::shared_ptr<Nccl>& g) {
  std::lock_guard<std::mutex> lk(m_);
  members_[rank] = g;
}

void Clique::leave(int rank) {
  std::lock_guard<std::mutex> lk(m_);
  members_[rank].reset();
}

std::string Clique::not_posted() {
  std::lock_guard<std::mutex> lk(m_);
  std::string out;
  for (size_t i = 0; i < queues_.size(); ++i) {
    if (!queues_[i].empty()) continue;
    if (!out.empty()) out += ", ";
    out += "cuda:" + std::to_string(devices_[i]);
  }
  return out;
}

void Clique::post(int rank, Launch l, OncePtr done, uint32_t seq, cudaEvent_t start) {
  std::vector<Post> batch;
  std::vector<std::shared_ptr<Nccl>> members;
  {
    std::lock_guard<std::mutex> lk(m_);
    queues_[rank].push_back(Post{std::move(l), std::move(done), seq, start});
    for (auto& q : queues_)
      if (q.empty()) return;  // the batch waits for the members that have not posted yet
    for (auto& q : queues_) {
      batch.push_back(std::move(q.front()));
      q.pop_front();
    }
    for (auto& w : members_) members.push_back(w.lock());
  }
  for (size_t i = 0; i < batch.size(); ++i) {
    if (!members[i])
      return fail(StreamError{Code::Disposed, std::string(batch[i].launch.op) + ": a group of this process was destroyed"});
  }
  for (size_t i = 0; i < batch.size(); ++i) {
    if (batch[i].launch.signature == batch[0].launch.signature) continue;
    const std::string why = "the groups of this process issued different collectives: " + batch[0].launch.signature +
                            " on rank 0 but " + batch[i].launch.signature + " on rank " + std::to_string(i);
    for (size_t k = 0; k < batch.size(); ++k)
      members[k]->drop(batch[k].seq, StreamError{Code::Arg, std::string(batch[k].launch.op) + ": " + why});
    return;
  }
  std::vector<Nccl::Member> ms;
  for (size_t i = 0; i < batch.size(); ++i)
    ms.push_back(Nccl::Member{members[i], std::move(batch[i].launch), std::move(batch[i].done), batch[i].seq, batch[i].start});
  {
    std::lock_guard<std::mutex> lk(launches_->m);
    launches_->jobs.push_back([ms = std::move(ms)]() mutable { Nccl::issue(ms); });
  }
  launches_->cv.notify_one();
}

void Clique::fail(const StreamError& e) {
  std::vector<std::shared_ptr<Nccl>> members;
  {
    std::lock_guard<std::mutex> lk(m_);
    for (auto& q : queues_) q.clear();  // their entries (and `done`s) belong to the groups, failed below
    for (auto& w : members_)
      if (auto g = w.lock()) members.push_back(std::move(g));
  }
  for (auto& g : members) g->fail_self(e);
}

namespace {

// Non-blocking communicators may return from a call before NCCL has queued its work on the
// stream; poll (no lock held between polls) until every one has. A failure or abort ends it.
std::optional<StreamError> await_queued(std::vector<Nccl::Member>& ms, const char* op,
                                        const std::function<std::optional<nccl::Result>(Nccl&)>& poll) {
  std::vector<bool> done(ms.size(), false);
  for (;;) {
    bool all = true;
    for (size_t i = 0; i < ms.size(); ++i) {
      if (done[i]) continue;
      const std::optional<nccl::Result> r = poll(*ms[i].g);
      if (!r) return StreamError{Code::Disposed, std::string(op) + ": the process group was aborted while launching"};
      if (*r == nccl::InProgress) {
        all = false;
        continue;
      }
      if (*r != nccl::Success)
        return StreamError{Code::Nccl, std::string(op) + ": NCCL failed on rank " + std::to_string(ms[i].g->rank()) + " (cuda:" +
                                           std::to_string(ms[i].g->device()) + "): " + nccl::load(nullptr)->GetErrorString(*r)};
      done[i] = true;
    }
    if (all) return std::nullopt;
    std::this_thread::sleep_for(kPollInterval);
  }
}

}  // namespace

void Nccl::issue(std::vector<Member>& ms) {
  const char* op = ms[0].launch.op;
  const nccl::Api& a = *nccl::load(nullptr);
  std::optional<StreamError> err;
  bool issued = false;
  {
    std::vector<std::unique_lock<std::mutex>> locks;
    for (Member& m : ms) locks.emplace_back(m.g->issue_m_);
    for (Member& m : ms) {
      if (auto why = m.g->refusal()) {
        err = named(op, *why);
        break;
      }
    }
    if (!err) {
      const bool grouped = ms.size() > 1;
      try {
        for (Member& m : ms) {
          cuda::DeviceGuard d(m.g->device_);
          cuda::check(cudaStreamWaitEvent(m.g->side_, m.start, 0), "cudaStreamWaitEvent");
        }
        if (grouped) check_nccl(a, a.GroupStart(), "ncclGroupStart");
        try {
          for (Member& m : ms) {
            if (!m.launch.call) continue;
            issued = true;
            const nccl::Result r = m.launch.call(a, m.g->comm_, m.g->side_);
            if (r != nccl::Success && r != nccl::InProgress)
              fail(Code::Nccl, "NCCL failed on rank ", m.g->rank_, " (cuda:", m.g->device_, "): ", a.GetErrorString(r));
          }
        } catch (...) {
          if (grouped) a.GroupEnd();  // closes the group this thread opened; its result adds nothing
          throw;
        }
        if (grouped) {
          const nccl::Result r = a.GroupEnd();
          if (r != nccl::Success && r != nccl::InProgress) fail(Code::Nccl, "ncclGroupEnd failed: ", a.GetErrorString(r));
        }
      } catch (const Error& e) {
        err = StreamError{e.code, std::string(op) + ": " + e.what()};
      }
      if (issued)
        for (Member& m : ms) m.g->mark_issued(m.seq);
    }
  }
  if (!err && issued) {
    err = await_queued(ms, op, [&a](Nccl& g) -> std::optional<nccl::Result> {
      std::lock_guard<std::mutex> ik(g.issue_m_);
      if (!g.comm_) return std::nullopt;
      nccl::Result r = nccl::Success;
      const nccl::Result q = a.CommGetAsyncError(g.comm_, &r);
      return q != nccl::Success ? q : r;
    });
  }
  std::vector<cudaEvent_t> finish(ms.size(), nullptr);
  if (!err) {
    try {
      for (size_t i = 0; i < ms.size(); ++i) {
        Nccl& g = *ms[i].g;
        cuda::DeviceGuard d(g.device_);
        g.gate_.write(g.side_, ms[i].seq);  // the compute stream goes on once the collective is done
        // After the write: once `finish` completes the gate is open and the post's slot is free.
        finish[i] = new_event();
        cuda::check(cudaEventRecord(finish[i], g.side_), "cudaEventRecord");
      }
    } catch (const Error& e) {
      err = StreamError{e.code, std::string(op) + ": " + e.what()};
    }
  }
  if (err && !issued) {
    // Refused before any NCCL call (not ready, or failed): settle the posts and let the streams go.
    for (Member& m : ms) m.g->drop(m.seq, *err);
    return;
  }
  if (err) {
    for (cudaEvent_t e : finish)
      if (e) cudaEventDestroy(e);
    // The ranks are out of step now: fail the clique, so every member sees it at once.
    ms[0].g->fail_group(*err);
    return;
  }
  for (size_t i = 0; i < ms.size(); ++i) ms[i].g->mark_launched(ms[i].seq, finish[i]);
}

}  // namespace flock::dist::nccl_group
