// Events: a record marks a point in a stream's queue (stream, ticket); query/sync look at that
// stream's progress, cudaStreamWaitEvent makes another stream's next op depend on it. Times are
// host steady-clock times taken when the executor reaches the record.
#include <chrono>
#include <unordered_map>
#include "runtime_state.h"

namespace sim::rt {
namespace {

using Clock = std::chrono::steady_clock;

struct Record {
  StreamPtr stream;
  uint64_t ticket = 0;
  Clock::time_point when;  // written by the executor before the ticket completes
};

}  // namespace
}  // namespace sim::rt

struct CUevent_st {
  int device = 0;
  unsigned flags = 0;
  std::mutex m;
  std::shared_ptr<sim::rt::Record> last;  // null until first recorded
};

namespace sim::rt {
namespace {

using EventPtr = std::shared_ptr<CUevent_st>;

struct Events {
  std::mutex m;
  std::unordered_map<CUevent_st*, EventPtr> handles;
};

Events& events() {
  static Events* e = new Events;
  return *e;
}

EventPtr resolve(cudaEvent_t h) {
  std::lock_guard<std::mutex> lk(events().m);
  auto it = events().handles.find(h);
  return it == events().handles.end() ? nullptr : it->second;
}

std::shared_ptr<Record> last_record(const EventPtr& e) {
  std::lock_guard<std::mutex> lk(e->m);
  return e->last;
}

bool done(const Record& r) {
  std::lock_guard<std::mutex> lk(r.stream->m);
  return r.stream->completed >= r.ticket;
}

}  // namespace
}  // namespace sim::rt

using namespace sim::rt;

extern "C" {

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* out, unsigned int flags) {
  if (cudaError_t e = enter("cudaEventCreateWithFlags")) return e;
  const unsigned known = cudaEventBlockingSync | cudaEventDisableTiming | cudaEventInterprocess;
  if (!out || (flags & ~known)) return record(cudaErrorInvalidValue);
  // An interprocess event must also disable timing, as in CUDA.
  if ((flags & cudaEventInterprocess) && !(flags & cudaEventDisableTiming)) return record(cudaErrorInvalidValue);
  if (cudaError_t e = current_context()) return record(e);
  auto ev = std::make_shared<CUevent_st>();
  ev->device = thread_state().current;
  ev->flags = flags;
  {
    std::lock_guard<std::mutex> lk(events().m);
    events().handles[ev.get()] = ev;
  }
  *out = ev.get();
  return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t* out) {
  if (cudaError_t e = enter("cudaEventCreate")) return e;
  return cudaEventCreateWithFlags(out, cudaEventDefault);
}

cudaError_t cudaEventDestroy(cudaEvent_t h) {
  if (cudaError_t e = enter("cudaEventDestroy")) return e;
  std::lock_guard<std::mutex> lk(events().m);
  // A pending record lives on in its stream op; destroying the event does not wait for it.
  if (!events().handles.erase(h)) return record(cudaErrorInvalidResourceHandle);
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t h, cudaStream_t stream) {
  if (cudaError_t e = enter("cudaEventRecord")) return e;
  EventPtr ev = resolve(h);
  if (!ev) return record(cudaErrorInvalidResourceHandle);
  cudaError_t err = cudaSuccess;
  StreamPtr s = resolve_stream(stream, &err);
  if (!s) return record(err);
  // CUDA requires the event and the stream to belong to the same device (context).
  if (s->device != ev->device) return record(cudaErrorInvalidResourceHandle);
  if (cudaError_t e = sticky_error(s->device)) return record(e);
  auto r = std::make_shared<Record>();
  r->stream = s;
  Op op;
  Record* raw = r.get();
  op.run = [raw, keep = r] { raw->when = Clock::now(); };
  r->ticket = enqueue(s, std::move(op));
  std::lock_guard<std::mutex> lk(ev->m);
  ev->last = std::move(r);
  return cudaSuccess;
}

cudaError_t cudaEventQuery(cudaEvent_t h) {
  if (cudaError_t e = enter("cudaEventQuery")) return e;
  EventPtr ev = resolve(h);
  if (!ev) return record(cudaErrorInvalidResourceHandle);
  if (cudaError_t e = sticky_error(ev->device)) return record(e);
  auto r = last_record(ev);
  if (!r || done(*r)) return cudaSuccess;  // never recorded: nothing to wait for
  return cudaErrorNotReady;
}

cudaError_t cudaEventSynchronize(cudaEvent_t h) {
  if (cudaError_t e = enter("cudaEventSynchronize")) return e;
  EventPtr ev = resolve(h);
  if (!ev) return record(cudaErrorInvalidResourceHandle);
  if (auto r = last_record(ev)) wait_ticket(r->stream, r->ticket);
  release_above_threshold(ev->device);
  return record(sticky_error(ev->device));
}

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t a, cudaEvent_t b) {
  if (cudaError_t e = enter("cudaEventElapsedTime")) return e;
  if (!ms) return record(cudaErrorInvalidValue);
  EventPtr ea = resolve(a), eb = resolve(b);
  if (!ea || !eb) return record(cudaErrorInvalidResourceHandle);
  if ((ea->flags | eb->flags) & cudaEventDisableTiming) return record(cudaErrorInvalidResourceHandle);
  if (cudaError_t e = sticky_error(ea->device)) return record(e);
  if (cudaError_t e = sticky_error(eb->device)) return record(e);
  auto ra = last_record(ea), rb = last_record(eb);
  if (!ra || !rb) return record(cudaErrorInvalidResourceHandle);
  if (!done(*ra) || !done(*rb)) return cudaErrorNotReady;
  *ms = std::chrono::duration<float, std::milli>(rb->when - ra->when).count();
  return cudaSuccess;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t h, unsigned int flags) {
  if (cudaError_t e = enter("cudaStreamWaitEvent")) return e;
  if (flags & ~unsigned(cudaEventWaitExternal)) return record(cudaErrorInvalidValue);
  EventPtr ev = resolve(h);
  if (!ev) return record(cudaErrorInvalidResourceHandle);
  cudaError_t err = cudaSuccess;
  StreamPtr s = resolve_stream(stream, &err);
  if (!s) return record(err);
  if (cudaError_t e = sticky_error(s->device)) return record(e);
  auto r = last_record(ev);
  if (!r) return cudaSuccess;  // an event never recorded is complete
  Op op;
  op.deps.push_back({r->stream, r->ticket});
  enqueue(s, std::move(op));
  return cudaSuccess;
}

}  // extern "C"
