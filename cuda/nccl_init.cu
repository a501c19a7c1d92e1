// Creating nccl groups: communicators are made non-blocking (ncclConfig_t blocking = 0) on a
// thread of their own, which polls ncclCommGetAsyncError until they are ready and aborts them
// when the group's timeout passes first, so a peer that never joins fails `ready` with
// ERR_TIMEOUT instead of leaving a thread waiting forever. The groups' later calls stay
// non-blocking too (see the watcher and the launcher).
#include <algorithm>
#include "context.h"
#include "nccl_group.cuh"

namespace flock::dist::nccl_group {
namespace {

nccl::Config non_blocking() {
  nccl::Config c;
  c.blocking = 0;
  return c;
}

// Polls until every communicator is ready. An error, a timeout or the group failing meanwhile
// ends it with the reason (the caller aborts the communicators).
std::optional<StreamError> await_ready(const nccl::Api& a, const std::vector<nccl::Comm>& cs, int timeout_ms, Nccl& g,
                                       const std::string& what) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    bool all = true;
    for (nccl::Comm c : cs) {
      nccl::Result r = nccl::Success;
      const nccl::Result q = a.CommGetAsyncError(c, &r);
      if (q != nccl::Success) r = q;
      if (r == nccl::InProgress) {
        all = false;
        continue;
      }
      if (r != nccl::Success) return StreamError{Code::Nccl, what + " failed: " + a.GetErrorString(r)};
    }
    if (all) return std::nullopt;
    if (g.failed())
      return StreamError{Code::Disposed, what + ": the process group failed or was destroyed while it was being made"};
    if (Clock::now() > deadline)
      return StreamError{Code::Timeout, what + " did not finish within " + std::to_string(timeout_ms) +
                                            " ms; a peer may not have joined (or joined with another id)"};
    std::this_thread::sleep_for(kPollInterval);
  }
}

void abort_all(const nccl::Api& a, std::vector<nccl::Comm>& cs) {
  for (nccl::Comm& c : cs)
    if (c) a.CommAbort(c), c = nullptr;
}

std::shared_ptr<ProcessGroup> init_rank(int rank, int size, int device, const NcclId& id, int timeout_ms, Done ready) {
  FLOCK_CHECK(size >= 1 && rank >= 0 && rank < size, Arg, "nccl: rank ", rank, " is outside a world of size ", size);
  check_visible(device);
  const nccl::Api& a = api();
  auto clique = std::make_shared<Clique>(std::vector<int>{device}, false);
  auto g = std::make_shared<Nccl>(rank, size, device, timeout_ms, clique);
  clique->join(0, g);
  auto once = std::make_shared<Once>(std::move(ready));
  g->set_ready(once);
  try {
    std::thread([g, id, once, lib = &a] {
      std::vector<nccl::Comm> cs(1, nullptr);
      try {
        cuda::DeviceGuard d(g->device());  // the communicator binds to the current device
        nccl::UniqueId uid;
        std::copy(id.begin(), id.end(), uid.internal);
        nccl::Config cfg = non_blocking();
        const std::string what =
            "ncclCommInitRank on rank " + std::to_string(g->rank()) + " (cuda:" + std::to_string(g->device()) + ")";
        const nccl::Result r = lib->CommInitRankConfig(&cs[0], g->size(), uid, g->rank(), &cfg);
        if (r != nccl::Success && r != nccl::InProgress) {
          abort_all(*lib, cs);
          fail(Code::Nccl, what, " failed: ", lib->GetErrorString(r));
        }
        if (auto err = await_ready(*lib, cs, g->timeout_ms(), *g, what)) {
          abort_all(*lib, cs);
          return g->fail_group(*err);
        }
        if (g->attach(cs[0])) (*once)(std::nullopt);
      } catch (const Error& e) {
        g->fail_group(StreamError{e.code, e.what()});
      } catch (const std::exception& e) {
        g->fail_group(StreamError{Code::Internal, e.what()});
      }
    }).detach();
  } catch (...) {
    g->set_ready(nullptr);  // the caller reports this by throwing; ready must not also fire
    throw;
  }
  return g;
}

std::vector<std::shared_ptr<ProcessGroup>> init_all(const std::vector<int>& devices, int timeout_ms, Done ready) {
  const int n = static_cast<int>(devices.size());
  FLOCK_CHECK(n >= 1, Arg, "nccl: initLocalGroups needs at least one device");
  for (int i = 0; i < n; ++i) {
    check_visible(devices[i]);
    for (int j = 0; j < i; ++j)
      FLOCK_CHECK(devices[j] != devices[i], Arg, "nccl: device cuda:", devices[i],
                  " is listed twice (NCCL takes each device once)");
  }
  const nccl::Api& a = api();
  auto clique = std::make_shared<Clique>(devices, true);
  auto once = std::make_shared<Once>(std::move(ready));
  std::vector<std::shared_ptr<Nccl>> gs;
  for (int i = 0; i < n; ++i) {
    gs.push_back(std::make_shared<Nccl>(i, n, devices[i], timeout_ms, clique));
    clique->join(i, gs.back());
    gs.back()->set_ready(once);
  }
  try {
    // What ncclCommInitAll does, with a config: one id, every rank's init in one NCCL group.
    std::thread([gs, devices, once, lib = &a] {
      std::vector<nccl::Comm> cs(gs.size(), nullptr);
      try {
        nccl::UniqueId uid{};
        check_nccl(*lib, lib->GetUniqueId(&uid), "ncclGetUniqueId");
        nccl::Config cfg = non_blocking();
        check_nccl(*lib, lib->GroupStart(), "ncclGroupStart");
        nccl::Result r = nccl::Success;
        for (size_t i = 0; i < gs.size() && (r == nccl::Success || r == nccl::InProgress); ++i) {
          cuda::DeviceGuard d(devices[i]);
          r = lib->CommInitRankConfig(&cs[i], static_cast<int>(cs.size()), uid, static_cast<int>(i), &cfg);
        }
        const nccl::Result end = lib->GroupEnd();
        if (r == nccl::Success || r == nccl::InProgress) r = end;
        if (r != nccl::Success && r != nccl::InProgress) {
          abort_all(*lib, cs);
          fail(Code::Nccl, "ncclCommInitAll failed: ", lib->GetErrorString(r));
        }
        if (auto err = await_ready(*lib, cs, gs[0]->timeout_ms(), *gs[0], "ncclCommInitAll")) {
          abort_all(*lib, cs);
          return gs[0]->fail_group(*err);
        }
        bool ok = true;
        for (size_t i = 0; i < gs.size(); ++i) ok = gs[i]->attach(cs[i]) && ok;
        if (ok) (*once)(std::nullopt);
      } catch (const Error& e) {
        gs[0]->fail_group(StreamError{e.code, e.what()});
      } catch (const std::exception& e) {
        gs[0]->fail_group(StreamError{Code::Internal, e.what()});
      }
    }).detach();
  } catch (...) {
    for (auto& g : gs) g->set_ready(nullptr);
    throw;
  }
  return {gs.begin(), gs.end()};
}

const bool registered = [] {
  nccl_backend().init_rank = init_rank;
  nccl_backend().init_all = init_all;
  return true;
}();

}  // namespace
}  // namespace flock::dist::nccl_group
