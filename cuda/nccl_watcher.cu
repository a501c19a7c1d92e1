// The watcher of one nccl group: a thread that polls the group's collectives about every
// millisecond, settles each as its `finish` event completes, drops its tensors, and fails the
// clique on NCCL's asynchronous error or a timeout, including a post still waiting for its peers.
#include "nccl_group.cuh"

namespace flock::dist::nccl_group {

std::optional<StreamError> Nccl::async_error(const std::string& where) {
  // Short: the communicator is non-blocking, so whoever holds this lock is not waiting on a peer.
  std::lock_guard<std::mutex> ik(issue_m_);
  if (!comm_) return std::nullopt;
  const nccl::Api& a = *nccl::load(nullptr);
  nccl::Result r = nccl::Success;
  if (a.CommGetAsyncError(comm_, &r) == nccl::Success && r != nccl::Success && r != nccl::InProgress)
    return StreamError{Code::Nccl, "NCCL reported an error" + where + ": " + a.GetErrorString(r)};
  return std::nullopt;
}

void Nccl::watch() {
  cuda::try_set_current_device(device_);
  std::unique_lock<std::mutex> lk(m_);
  for (;;) {
    if (inflight_.empty() && graveyard_.empty()) {
      if (stopping_) return;
      cv_.wait(lk);
      continue;
    }
    if (stopping_ && inflight_.empty()) return;  // the destructor deals with the graveyard

    const std::string where = " on rank " + std::to_string(rank_) + " (cuda:" + std::to_string(device_) + ")";
    // NCCL reports a collective that went wrong (peers that posted different collectives, an
    // aborted peer) through the communicator's asynchronous error while the collective's finish
    // event still completes: ask before settling, so a finished collective counts as a success only
    // when NCCL reported nothing. (Asked without m_: issue_m_ is taken before m_.)
    std::optional<StreamError> async_failure;
    if (!inflight_.empty() && inflight_.front().launched) {
      lk.unlock();
      async_failure = async_error(where);
      lk.lock();
    }

    // The communication stream runs its collectives in order, so they finish in order.
    std::vector<std::pair<OncePtr, std::optional<StreamError>>> settled;
    std::vector<InFlight> finished;
    while (!inflight_.empty() && inflight_.front().launched) {
      InFlight& f = inflight_.front();
      const cudaError_t q = cudaEventQuery(f.finish);
      if (q == cudaErrorNotReady) {
        if (!f.began && cudaEventQuery(f.start) == cudaSuccess) f.began = Clock::now();
        break;
      }
      std::optional<StreamError> e;
      if (q != cudaSuccess) {
        cudaGetLastError();
        e = StreamError{Code::Cuda, std::string(f.op) + ": " + cudaGetErrorString(q)};
      } else if (async_failure) {
        e = StreamError{async_failure->code, std::string(f.op) + ": " + async_failure->message};
      }
      settled.emplace_back(std::move(f.done), std::move(e));
      finished.push_back(std::move(f));
      inflight_.pop_front();
    }
    for (auto it = graveyard_.begin(); it != graveyard_.end();) {
      if (it->finish && cudaEventQuery(it->finish) != cudaErrorNotReady) {
        finished.push_back(std::move(*it));
        it = graveyard_.erase(it);
      } else {
        ++it;
      }
    }
    cudaGetLastError();
    std::optional<StreamError> failure = async_failure;
    const bool busy = !inflight_.empty();
    const int limit = timeout_ms_.load();
    if (busy && !inflight_.front().launched) {
      // Posted, but its batch has not been launched: its peers have not all posted (or the
      // launcher is still handing it to NCCL). The clock runs from the post.
      const InFlight& f = inflight_.front();
      const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - f.posted).count();
      if (waited > limit) {
        lk.unlock();
        const std::string missing = clique_->not_posted();
        lk.lock();
        failure = StreamError{Code::Timeout,
                              std::string(f.op) + where + " waited " + std::to_string(limit) + " ms for " +
                                  (missing.empty() ? std::string("its launch")
                                                   : missing + ", which never posted it; every group of one process must "
                                                               "issue the same collectives in the same order")};
      }
    } else if (busy && inflight_.front().began) {
      // The clock starts when the collective could start (its inputs were ready), so time spent
      // queued behind compute or earlier collectives is not counted against it.
      const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - *inflight_.front().began).count();
      if (waited > limit)
        failure =
            StreamError{Code::Timeout, std::string(inflight_.front().op) + where + " did not finish within " +
                                           std::to_string(limit) + " ms; a peer may have died or issued different collectives"};
    }
    lk.unlock();

    // A callback below, or failing the clique, may drop the last reference to this group; its
    // destructor then runs on this thread (and detaches it). Hold a reference until they are done,
    // drop it, and touch nothing of this group once it is gone. (While the group is still being
    // built it has no owner yet and nothing is in flight, so `self` may be empty.)
    std::shared_ptr<Nccl> self = weak_from_this().lock();
    for (InFlight& f : finished) {
      if (f.start) cudaEventDestroy(f.start);
      if (f.finish) cudaEventDestroy(f.finish);
    }
    finished.clear();  // drops the tensors: their storages go back to the allocator
    for (auto& [done, e] : settled)
      if (done) (*done)(std::move(e));
    settled.clear();

    if (!failure && busy) failure = async_error(where);
    if (failure) fail_group(*failure);
    if (self) {
      const std::weak_ptr<Nccl> alive = self;
      self.reset();
      // Expired: destroyed here (detached: return at once), or being destroyed by another thread
      // (which joins this one after setting stopping_).
      if (alive.expired()) return;
    }

    lk.lock();
    if (!inflight_.empty() || !graveyard_.empty()) cv_.wait_for(lk, kPollInterval);
  }
}

}  // namespace flock::dist::nccl_group
