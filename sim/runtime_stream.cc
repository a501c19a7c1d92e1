// Streams: ordered op queues, one executor thread each; the legacy default stream's implicit
// ordering; stream create/destroy/sync/query/wait-event; host functions; process teardown.
#include <chrono>
#include <cstdlib>
#include <exception>
#include <thread>
#include <unordered_map>
#include "runtime_state.h"

namespace sim::rt {
namespace {

std::atomic<bool> g_shutting_down{false};
std::atomic<int> g_busy_executors{0};
std::atomic<uint64_t> g_next_stream_id{1};

// Live stream handles and each device's streams (user streams still draining after destroy
// included: later legacy-stream work orders after them). Never destroyed, like all runtime state.
struct Streams {
  std::mutex m;  // guards handles and, per device, `of` and the legacy pointers
  std::unordered_map<CUstream_st*, StreamPtr> handles;
  std::vector<StreamPtr> of[kMaxDevices];
  StreamPtr legacy[kMaxDevices];
};

Streams& streams() {
  static Streams* s = new Streams;
  return *s;
}

// Per-device lock that makes "snapshot the other streams, then take a ticket" atomic, so the
// implicit legacy-stream dependencies always point at earlier ops.
std::mutex& order_mutex(int d) {
  static std::mutex* m = new std::mutex[kMaxDevices];
  return m[d];
}

void run_op(CUstream_st& s, Op& op) {
  for (const Dep& d : op.deps) wait_ticket(d.stream, d.ticket);
  if (shutting_down()) return;
  if (!op.run || (sticky_error(s.device) != cudaSuccess && !op.bookkeeping)) return;
  try {
    op.run();
  } catch (const std::exception& e) {
    set_sticky(s.device, cudaErrorLaunchFailure, e.what());
  } catch (...) {
    set_sticky(s.device, cudaErrorLaunchFailure, "a stream operation threw a non-standard exception");
  }
}

void executor(StreamPtr sp) {
  CUstream_st& s = *sp;
  thread_state().current = s.device;  // the device's context exists: the stream was made in it
  for (;;) {
    Op op;
    {
      std::unique_lock<std::mutex> lk(s.m);
      s.cv.wait(lk, [&] { return !s.queue.empty() || s.destroyed || shutting_down(); });
      if (shutting_down()) {
        // Teardown abandons queued work, as a process exit does to a GPU context.
        s.queue.clear();
        s.completed = s.enqueued;
        s.cv.notify_all();
        return;
      }
      if (s.queue.empty()) break;  // destroyed and drained
      op = std::move(s.queue.front());
      s.queue.pop_front();
    }
    g_busy_executors.fetch_add(1);
    run_op(s, op);
    op = Op{};  // release captures before the ticket is published
    g_busy_executors.fetch_sub(1);
    {
      std::lock_guard<std::mutex> lk(s.m);
      ++s.completed;
    }
    s.cv.notify_all();
  }
  std::lock_guard<std::mutex> lk(streams().m);
  auto& v = streams().of[s.device];
  for (auto it = v.begin(); it != v.end(); ++it)
    if (it->get() == &s) {
      v.erase(it);
      break;
    }
}

void exit_hook() {
  g_shutting_down.store(true);
  std::vector<StreamPtr> all;
  {
    std::lock_guard<std::mutex> lk(streams().m);
    for (auto& v : streams().of) all.insert(all.end(), v.begin(), v.end());
  }
  for (auto& s : all) {
    std::lock_guard<std::mutex> lk(s->m);
    s->cv.notify_all();
  }
  notify_value_written();
  // Let running ops (a kernel mid-grid) finish before the engine's statics go; bounded, so an op
  // that never returns cannot hang the exit.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (g_busy_executors.load() > 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

StreamPtr make_stream(int d, unsigned flags, bool legacy) {
  auto s = std::make_shared<CUstream_st>();
  s->device = d;
  s->flags = flags;
  s->legacy = legacy;
  s->id = g_next_stream_id.fetch_add(1);
  register_exit_hook();
  return s;
}

StreamPtr legacy_stream(int d) {
  Streams& all = streams();
  std::lock_guard<std::mutex> lk(all.m);
  if (!all.legacy[d]) {
    all.legacy[d] = make_stream(d, 0, true);
    all.of[d].push_back(all.legacy[d]);
  }
  return all.legacy[d];
}

std::vector<StreamPtr> device_streams(int d) {
  std::lock_guard<std::mutex> lk(streams().m);
  return streams().of[d];
}

uint64_t enqueued_now(const StreamPtr& s) {
  std::lock_guard<std::mutex> lk(s->m);
  return s->enqueued;
}

}  // namespace

bool shutting_down() { return g_shutting_down.load(std::memory_order_relaxed); }

// Registered when the first stream is made and again after the first kernel ran (runtime_launch.cc):
// atexit handlers run before the destructors of statics built earlier, so the engine's worker
// pool is still alive while the hook stops the executors.
void register_exit_hook() {
  static std::atomic<int> registered{0};
  if (registered.load() >= 2) return;
  std::atexit(exit_hook);
  registered.fetch_add(1);
}

StreamPtr resolve_stream(cudaStream_t h, cudaError_t* err) {
  if (h == nullptr || h == cudaStreamLegacy || h == cudaStreamPerThread) {
    if (cudaError_t e = current_context(); e == cudaErrorNoDevice) {
      *err = e;
      return nullptr;
    }
    return legacy_stream(thread_state().current);
  }
  std::lock_guard<std::mutex> lk(streams().m);
  auto it = streams().handles.find(h);
  if (it == streams().handles.end()) {
    *err = cudaErrorInvalidResourceHandle;
    return nullptr;
  }
  return it->second;
}

uint64_t enqueue(const StreamPtr& s, Op op) {
  std::lock_guard<std::mutex> order(order_mutex(s->device));
  if (s->legacy) {
    for (const StreamPtr& b : device_streams(s->device))
      if (b->blocking()) op.deps.push_back({b, enqueued_now(b)});
  } else if (s->blocking()) {
    StreamPtr l;
    {
      std::lock_guard<std::mutex> lk(streams().m);
      l = streams().legacy[s->device];
    }
    if (l) op.deps.push_back({l, enqueued_now(l)});
  }
  bool start = false;
  uint64_t ticket;
  {
    std::lock_guard<std::mutex> lk(s->m);
    s->queue.push_back(std::move(op));
    ticket = ++s->enqueued;
    start = !s->executor_started;
    s->executor_started = true;
  }
  // Detached: cudaStreamDestroy returns at once while queued work still runs (as in CUDA), and the
  // thread owns its stream until it has drained it.
  if (start) std::thread(executor, s).detach();
  s->cv.notify_all();
  return ticket;
}

void wait_ticket(const StreamPtr& s, uint64_t ticket) {
  std::unique_lock<std::mutex> lk(s->m);
  s->cv.wait(lk, [&] { return s->completed >= ticket || shutting_down(); });
}

std::vector<Dep> stream_frontier(const StreamPtr& s) {
  std::vector<Dep> f{{s, enqueued_now(s)}};
  if (s->legacy)
    for (const StreamPtr& b : device_streams(s->device))
      if (b->blocking()) f.push_back({b, enqueued_now(b)});
  return f;
}

void synchronize_device(int d) {
  std::vector<Dep> deps;
  for (const StreamPtr& s : device_streams(d)) deps.push_back({s, enqueued_now(s)});
  for (const Dep& dep : deps) wait_ticket(dep.stream, dep.ticket);
}

}  // namespace sim::rt

using namespace sim::rt;

extern "C" {

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* out, unsigned int flags) {
  if (cudaError_t e = enter("cudaStreamCreateWithFlags")) return e;
  if (!out || (flags & ~unsigned(cudaStreamNonBlocking))) return record(cudaErrorInvalidValue);
  if (cudaError_t e = current_context()) return record(e);
  const int d = thread_state().current;
  StreamPtr s = make_stream(d, flags, false);
  {
    std::lock_guard<std::mutex> lk(streams().m);
    streams().handles[s.get()] = s;
    streams().of[d].push_back(s);
  }
  device(d).live_streams.fetch_add(1);
  *out = s.get();
  return cudaSuccess;
}

cudaError_t cudaStreamCreate(cudaStream_t* out) {
  if (cudaError_t e = enter("cudaStreamCreate")) return e;
  return cudaStreamCreateWithFlags(out, cudaStreamDefault);
}

cudaError_t cudaStreamDestroy(cudaStream_t h) {
  if (cudaError_t e = enter("cudaStreamDestroy")) return e;
  if (h == nullptr || h == cudaStreamLegacy || h == cudaStreamPerThread) return record(cudaErrorInvalidResourceHandle);
  StreamPtr s;
  {
    std::lock_guard<std::mutex> lk(streams().m);
    auto it = streams().handles.find(h);
    if (it == streams().handles.end()) return record(cudaErrorInvalidResourceHandle);
    s = it->second;
    streams().handles.erase(it);
  }
  device(s->device).live_streams.fetch_sub(1);
  bool idle;
  {
    std::lock_guard<std::mutex> lk(s->m);
    s->destroyed = true;
    idle = !s->executor_started;
  }
  if (idle) {  // no executor will ever remove it from the device's list
    std::lock_guard<std::mutex> lk(streams().m);
    auto& v = streams().of[s->device];
    for (auto it = v.begin(); it != v.end(); ++it)
      if (*it == s) {
        v.erase(it);
        break;
      }
  }
  s->cv.notify_all();
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t h) {
  if (cudaError_t e = enter("cudaStreamSynchronize")) return e;
  cudaError_t err = cudaSuccess;
  StreamPtr s = resolve_stream(h, &err);
  if (!s) return record(err);
  for (const Dep& d : stream_frontier(s)) wait_ticket(d.stream, d.ticket);
  release_above_threshold(s->device);
  return record(sticky_error(s->device));
}

cudaError_t cudaStreamQuery(cudaStream_t h) {
  if (cudaError_t e = enter("cudaStreamQuery")) return e;
  cudaError_t err = cudaSuccess;
  StreamPtr s = resolve_stream(h, &err);
  if (!s) return record(err);
  if (cudaError_t e = sticky_error(s->device)) return record(e);
  for (const Dep& d : stream_frontier(s)) {
    std::lock_guard<std::mutex> lk(d.stream->m);
    if (d.stream->completed < d.ticket) return cudaErrorNotReady;
  }
  return cudaSuccess;
}

cudaError_t cudaLaunchHostFunc(cudaStream_t h, cudaHostFn_t fn, void* data) {
  if (cudaError_t e = enter("cudaLaunchHostFunc")) return e;
  if (!fn) return record(cudaErrorInvalidValue);
  cudaError_t err = cudaSuccess;
  StreamPtr s = resolve_stream(h, &err);
  if (!s) return record(err);
  if (cudaError_t e = sticky_error(s->device)) return record(e);
  Op op;
  op.run = [fn, data] {
    ThreadState& t = thread_state();
    t.in_host_fn = true;
    try {
      fn(data);
    } catch (...) {
      t.in_host_fn = false;
      throw;
    }
    t.in_host_fn = false;
  };
  enqueue(s, std::move(op));
  return cudaSuccess;
}

}  // extern "C"

namespace sim {

void enqueue_host_op(cudaStream_t stream, std::function<void()> fn) {
  cudaError_t err = cudaSuccess;
  rt::StreamPtr s = rt::resolve_stream(stream, &err);
  if (!s) {
    rt::record(err);
    return;
  }
  rt::Op op;
  op.run = std::move(fn);
  rt::enqueue(s, std::move(op));
}

}  // namespace sim
