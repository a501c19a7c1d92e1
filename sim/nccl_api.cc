// The simulated NCCL's C API: the 17 symbols flockml binds (cpp/distributed/nccl.cc), exported
// from whichever binary these files are linked into. In the simulator's addon
// (build/sim/flockml.node, compiled with -fvisibility=hidden) they are marked default-visible, so
// FLOCKML_NCCL_PATH=<that .node> makes flockml's dlopen return the already-loaded addon (glibc
// matches the file, not the path string) and dlsym find them there, sharing its simulated
// runtime: NCCL calls are queued on the very streams flockml's kernels use.
//
// Checks follow NCCL's: a null communicator, buffer or pointer argument, an unknown dtype or op, a
// root or peer outside the communicator, or a buffer that is not device memory of the
// communicator's device (or runs past its allocation) is ncclInvalidArgument, reported at the
// call; a zero count queues nothing. Set NCCL_DEBUG to have the reason printed, as NCCL does.
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <mutex>
#include "nccl_api.h"
#include "nccl_comm.h"
#include "nccl_reduce.h"
#include "runtime_state.h"

// The handle ncclComm_t points to. Kept after ncclCommAbort/ncclCommDestroy as a small tombstone
// (NCCL frees it: any later use is undefined there), so a stale handle reports an error instead
// of crashing; the communicator's resources go once its last queued call has run.
struct ncclComm {
  std::mutex m;
  std::shared_ptr<sim::nccl::Comm> state;  // null once aborted or destroyed
  ncclResult_t final_state = ncclInvalidUsage;
};

namespace sim::nccl {
namespace {

constexpr char kIdMagic[4] = {'F', 'L', 'S', 'N'};

ncclResult_t warn(ncclResult_t r, const char* fmt, ...) {
  static const bool on = std::getenv("NCCL_DEBUG") != nullptr;
  if (on) {
    std::va_list ap;
    va_start(ap, fmt);
    std::fprintf(stderr, "NCCL WARN (flockml cuda sim) ");
    std::vfprintf(stderr, fmt, ap);
    std::fprintf(stderr, "\n");
    va_end(ap);
  }
  return r;
}

std::shared_ptr<Comm> state_of(ncclComm_t comm) {
  std::lock_guard<std::mutex> lk(comm->m);
  return comm->state;
}

// The calls of ncclGroupStart/End, per thread, as NCCL keeps them.
struct Queued {
  std::shared_ptr<Comm> comm;
  rt::StreamPtr stream;
  Call call;
};
struct GroupState {
  int depth = 0;
  std::vector<Queued> calls;
  std::vector<std::shared_ptr<Comm>> blocking_inits, nonblocking_inits;
};
GroupState& group() {
  static thread_local GroupState g;
  return g;
}

// Queues one batch on the stream. The batch's destructor marks the calls done, so a batch the
// executor skips (a faulted device, process exit) still lets ncclCommDestroy return.
void launch(const std::shared_ptr<Comm>& comm, const rt::StreamPtr& stream, std::vector<Call> calls) {
  struct Batch {
    std::shared_ptr<Comm> comm;
    std::vector<Call> calls;
    ~Batch() { comm->end_call(); }
  };
  comm->begin_call();
  auto b = std::make_shared<Batch>();  // built in place: a temporary's destructor would end the call
  b->comm = comm;
  b->calls = std::move(calls);
  rt::Op op;
  op.run = [b] { b->comm->run(b->calls); };
  rt::enqueue(stream, std::move(op));
}

// The stream a call goes to; the null stream is the communicator's device's legacy stream (NCCL
// makes the communicator's device current before it launches).
ncclResult_t resolve(cudaStream_t s, int device, rt::StreamPtr* out) {
  cudaError_t err = cudaSuccess;
  if (s == nullptr || s == cudaStreamLegacy || s == cudaStreamPerThread) {
    rt::ThreadState& ts = rt::thread_state();
    const int saved = ts.current;
    ts.current = device;
    *out = rt::resolve_stream(s, &err);
    ts.current = saved;
  } else {
    *out = rt::resolve_stream(s, &err);
  }
  if (!*out) return warn(ncclUnhandledCudaError, "stream %p is not a live CUDA stream", static_cast<void*>(s));
  if ((*out)->device != device)
    return warn(ncclInvalidArgument, "the stream is on cuda:%d but the communicator on cuda:%d", (*out)->device, device);
  return ncclSuccess;
}

ncclResult_t check_buffer(const char* api, const char* what, const void* p, size_t bytes, int device) {
  if (!p) return warn(ncclInvalidArgument, "%s: %s is null", api, what);
  const auto a = rt::find_alloc(p);
  if (!a || a->device < 0 || !a->live) return warn(ncclInvalidArgument, "%s: %s %p is not device memory", api, what, p);
  if (a->device != device)
    return warn(ncclInvalidArgument, "%s: %s %p is on cuda:%d but the communicator is on cuda:%d", api, what, p, a->device,
                device);
  if (reinterpret_cast<uintptr_t>(p) + bytes > a->base + a->size)
    return warn(ncclInvalidArgument, "%s: %s %p holds fewer than the %zu bytes the call moves", api, what, p, bytes);
  return ncclSuccess;
}

ncclResult_t submit(const char* api, ncclComm_t comm, Call c, cudaStream_t stream) {
  if (!comm) return warn(ncclInvalidArgument, "%s: comm is null", api);
  std::shared_ptr<Comm> st = state_of(comm);
  if (!st) return warn(ncclInvalidUsage, "%s: the communicator was aborted or destroyed", api);
  const ncclResult_t now = st->state();
  if (now != ncclSuccess && now != ncclInProgress) return warn(now, "%s: the communicator has failed", api);
  const size_t esz = dtype_size(c.dtype);
  if (esz == 0) return warn(ncclInvalidArgument, "%s: datatype %d is not an ncclDataType_t", api, c.dtype);
  const bool reduces = c.kind == Kind::AllReduce || c.kind == Kind::ReduceScatter;
  if (reduces && (c.op < 0 || c.op >= ncclNumOps)) return warn(ncclInvalidArgument, "%s: op %d is not an ncclRedOp_t", api, c.op);
  const bool ranked = c.kind == Kind::Broadcast || is_p2p(c.kind);
  if (ranked && (c.peer < 0 || c.peer >= st->nranks()))
    return warn(ncclInvalidArgument, "%s: %s %d is outside a communicator of %d ranks", api,
                c.kind == Kind::Broadcast ? "root" : "peer", c.peer, st->nranks());
  if (c.count == 0) return ncclSuccess;
  const size_t n = static_cast<size_t>(st->nranks());
  if (c.count > SIZE_MAX / esz / n) return warn(ncclInvalidArgument, "%s: count %zu overflows", api, c.count);
  const size_t bytes = c.count * esz, all = bytes * n;
  const int dev = st->device();
  ncclResult_t r = ncclSuccess;
  switch (c.kind) {
    case Kind::AllReduce:
      r = check_buffer(api, "sendbuff", c.send, bytes, dev);
      if (!r) r = check_buffer(api, "recvbuff", c.recv, bytes, dev);
      break;
    case Kind::Broadcast:
      if (c.peer == st->rank()) r = check_buffer(api, "sendbuff", c.send, bytes, dev);
      if (!r) r = check_buffer(api, "recvbuff", c.recv, bytes, dev);
      break;
    case Kind::AllGather:
      r = check_buffer(api, "sendbuff", c.send, bytes, dev);
      if (!r) r = check_buffer(api, "recvbuff", c.recv, all, dev);
      break;
    case Kind::ReduceScatter:
      r = check_buffer(api, "sendbuff", c.send, all, dev);
      if (!r) r = check_buffer(api, "recvbuff", c.recv, bytes, dev);
      break;
    case Kind::Send:
      r = check_buffer(api, "sendbuff", c.send, bytes, dev);
      break;
    case Kind::Recv:
      r = check_buffer(api, "recvbuff", c.recv, bytes, dev);
      break;
  }
  if (r != ncclSuccess) return r;
  rt::StreamPtr s;
  if ((r = resolve(stream, dev, &s)) != ncclSuccess) return r;
  c.seq = is_p2p(c.kind) ? 0 : st->next_seq();
  GroupState& g = group();
  if (g.depth > 0) {
    g.calls.push_back(Queued{st, s, c});
    return ncclSuccess;
  }
  launch(st, s, {c});
  return ncclSuccess;
}

bool parse_id(const ncclUniqueId& id, std::string* name) {
  if (std::memcmp(id.internal, kIdMagic, sizeof kIdMagic) != 0) return false;
  const char* s = id.internal + sizeof kIdMagic;
  const size_t len = strnlen(s, sizeof id.internal - sizeof kIdMagic);
  if (len == 0 || len == sizeof id.internal - sizeof kIdMagic) return false;
  *name = std::string(s, len);
  return true;
}

}  // namespace
}  // namespace sim::nccl

using namespace sim::nccl;

FLOCK_NCCL_API ncclResult_t ncclGetVersion(int* version) {
  if (!version) return ncclInvalidArgument;
  *version = kVersion;
  return ncclSuccess;
}

FLOCK_NCCL_API const char* ncclGetErrorString(ncclResult_t r) {
  switch (r) {
    case ncclSuccess:
      return "no error";
    case ncclUnhandledCudaError:
      return "unhandled cuda error (simulated NCCL; set NCCL_DEBUG=WARN for details)";
    case ncclSystemError:
      return "unhandled system error (simulated NCCL; set NCCL_DEBUG=WARN for details)";
    case ncclInternalError:
      return "internal error (simulated NCCL)";
    case ncclInvalidArgument:
      return "invalid argument (simulated NCCL; set NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage:
      return "invalid usage (simulated NCCL; set NCCL_DEBUG=WARN for details)";
    case ncclRemoteError:
      return "remote process exited or there was a network error";
    case ncclInProgress:
      return "NCCL operation in progress";
    default:
      return "unknown result code";
  }
}

FLOCK_NCCL_API ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  if (!id) return ncclInvalidArgument;
  const std::string name = create_segment();
  if (name.empty()) return warn(ncclSystemError, "ncclGetUniqueId: cannot create a shared-memory segment in /dev/shm");
  if (name.size() + sizeof kIdMagic >= sizeof id->internal) return ncclInternalError;
  std::memset(id->internal, 0, sizeof id->internal);
  std::memcpy(id->internal, kIdMagic, sizeof kIdMagic);
  std::memcpy(id->internal + sizeof kIdMagic, name.data(), name.size());
  return ncclSuccess;
}

FLOCK_NCCL_API ncclResult_t ncclCommInitRankConfig(ncclComm_t* out, int nranks, ncclUniqueId id, int rank, ncclConfig_t* config) {
  if (!out) return warn(ncclInvalidArgument, "ncclCommInitRank: comm is null");
  *out = nullptr;
  if (nranks < 1 || nranks > kMaxRanks)
    return warn(ncclInvalidArgument, "ncclCommInitRank: nranks %d is not 1..%d", nranks, kMaxRanks);
  if (rank < 0 || rank >= nranks)
    return warn(ncclInvalidArgument, "ncclCommInitRank: rank %d is outside 0..%d", rank, nranks - 1);
  bool blocking = true;  // NCCL's default
  if (config) {
    if (config->magic != kConfigMagic) return warn(ncclInvalidArgument, "ncclCommInitRankConfig: the config was not initialised");
    if (config->size >= offsetof(ncclConfig_t, blocking) + sizeof(int) && config->blocking != kConfigUndefInt)
      blocking = config->blocking != 0;
  }
  std::string name;
  if (!parse_id(id, &name)) return warn(ncclInvalidArgument, "ncclCommInitRank: the unique id was not made by ncclGetUniqueId");
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return warn(ncclUnhandledCudaError, "ncclCommInitRank: no current CUDA device");
  sim::rt::ensure_context(device);  // NCCL allocates on the current device at init: its context appears
  ncclResult_t err = ncclSuccess;
  std::string why;
  std::shared_ptr<Comm> st = Comm::join(name, nranks, rank, device, &err, &why);
  if (!st) return warn(err, "ncclCommInitRank (rank %d of %d): %s", rank, nranks, why.c_str());
  auto* handle = new ncclComm;
  handle->state = st;
  *out = handle;
  GroupState& g = group();
  if (blocking) {
    // In a group NCCL defers a blocking init's wait to ncclGroupEnd (how ncclCommInitAll works).
    if (g.depth > 0)
      g.blocking_inits.push_back(st);
    else
      st->wait_joined();
    return ncclSuccess;
  }
  if (g.depth > 0) g.nonblocking_inits.push_back(st);
  return ncclInProgress;
}

FLOCK_NCCL_API ncclResult_t ncclCommInitRank(ncclComm_t* out, int nranks, ncclUniqueId id, int rank) {
  return ncclCommInitRankConfig(out, nranks, id, rank, nullptr);
}

FLOCK_NCCL_API ncclResult_t ncclGroupStart() {
  ++group().depth;
  return ncclSuccess;
}

FLOCK_NCCL_API ncclResult_t ncclGroupEnd() {
  GroupState& g = group();
  if (g.depth == 0) return warn(ncclInvalidUsage, "ncclGroupEnd without ncclGroupStart");
  if (--g.depth > 0) return ncclSuccess;
  // One batch per (communicator, stream), in the order of its first call: a batch's sends and
  // recvs progress together on the stream.
  struct Part {
    std::shared_ptr<Comm> comm;
    sim::rt::StreamPtr stream;
    std::vector<Call> calls;
  };
  std::vector<Part> parts;
  for (Queued& q : g.calls) {
    auto it = std::find_if(parts.begin(), parts.end(), [&](const Part& p) { return p.comm == q.comm && p.stream == q.stream; });
    if (it == parts.end()) it = parts.insert(parts.end(), Part{q.comm, q.stream, {}});
    it->calls.push_back(q.call);
  }
  std::vector<Queued>().swap(g.calls);
  for (Part& p : parts) launch(p.comm, p.stream, std::move(p.calls));
  for (auto& c : g.blocking_inits) c->wait_joined();
  ncclResult_t r = ncclSuccess;
  for (auto& c : g.nonblocking_inits)
    if (c->state() == ncclInProgress) r = ncclInProgress;
  g.blocking_inits.clear();
  g.nonblocking_inits.clear();
  return r;
}

FLOCK_NCCL_API ncclResult_t ncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist) {
  if (!comms || ndev < 1 || ndev > kMaxRanks)
    return warn(ncclInvalidArgument, "ncclCommInitAll: comms is null or ndev %d is not 1..%d", ndev, kMaxRanks);
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) return warn(ncclUnhandledCudaError, "ncclCommInitAll: no CUDA device");
  for (int i = 0; i < ndev; ++i) {
    const int d = devlist ? devlist[i] : i;
    if (d < 0 || d >= count) return warn(ncclInvalidArgument, "ncclCommInitAll: device %d does not exist", d);
    for (int j = 0; j < i; ++j)
      if (devlist && devlist[j] == d) return warn(ncclInvalidArgument, "ncclCommInitAll: device %d is listed twice", d);
  }
  ncclUniqueId id;
  if (ncclResult_t r = ncclGetUniqueId(&id)) return r;
  int saved = 0;
  cudaGetDevice(&saved);
  ncclGroupStart();
  ncclResult_t r = ncclSuccess;
  for (int i = 0; i < ndev && r == ncclSuccess; ++i) {
    cudaSetDevice(devlist ? devlist[i] : i);
    r = ncclCommInitRank(&comms[i], ndev, id, i);
  }
  if (r != ncclSuccess) {
    for (int i = 0; i < ndev; ++i)
      if (comms[i]) ncclCommAbort(comms[i]), comms[i] = nullptr;
    group().blocking_inits.clear();
  }
  const ncclResult_t end = ncclGroupEnd();
  cudaSetDevice(saved);  // as NCCL does (since CUDA 12 this makes `saved`'s context, as there)
  return r != ncclSuccess ? r : end;
}

FLOCK_NCCL_API ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* async_error) {
  if (!comm || !async_error) return ncclInvalidArgument;
  std::lock_guard<std::mutex> lk(comm->m);
  *async_error = comm->state ? comm->state->state() : comm->final_state;
  return ncclSuccess;
}

// Returns at once: the communicator's waiting calls wake and end without touching their outputs.
// (The fault plan can hold it, "ncclCommAbort:1:hold", as a real abort that takes its time.)
FLOCK_NCCL_API ncclResult_t ncclCommAbort(ncclComm_t comm) {
  if (!comm) return ncclSuccess;
  if (sim::rt::fault_due("ncclCommAbort")) return warn(ncclSystemError, "ncclCommAbort: injected failure");
  std::shared_ptr<Comm> st;
  {
    std::lock_guard<std::mutex> lk(comm->m);
    st = std::move(comm->state);
    comm->state.reset();
  }
  if (!st) return ncclSuccess;
  st->abort();
  std::lock_guard<std::mutex> lk(comm->m);
  comm->final_state = st->state();
  return ncclSuccess;
}

// Waits for the communicator's queued calls (a peer that never comes makes it wait, as NCCL's).
FLOCK_NCCL_API ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (!comm) return ncclSuccess;
  std::shared_ptr<Comm> st = state_of(comm);
  if (!st) return ncclSuccess;
  st->wait_idle();
  std::lock_guard<std::mutex> lk(comm->m);
  const ncclResult_t s = st->state();
  comm->final_state = s == ncclSuccess || s == ncclInProgress ? ncclInvalidUsage : s;
  comm->state.reset();
  return ncclSuccess;
}

FLOCK_NCCL_API ncclResult_t ncclAllReduce(const void* send, void* recv, size_t count, ncclDataType_t dtype, ncclRedOp_t op,
                                          ncclComm_t comm, cudaStream_t stream) {
  return submit("ncclAllReduce", comm, Call{Kind::AllReduce, send, recv, count, dtype, op, 0, 0}, stream);
}

FLOCK_NCCL_API ncclResult_t ncclBroadcast(const void* send, void* recv, size_t count, ncclDataType_t dtype, int root,
                                          ncclComm_t comm, cudaStream_t stream) {
  return submit("ncclBroadcast", comm, Call{Kind::Broadcast, send, recv, count, dtype, 0, root, 0}, stream);
}

FLOCK_NCCL_API ncclResult_t ncclAllGather(const void* send, void* recv, size_t sendcount, ncclDataType_t dtype, ncclComm_t comm,
                                          cudaStream_t stream) {
  return submit("ncclAllGather", comm, Call{Kind::AllGather, send, recv, sendcount, dtype, 0, 0, 0}, stream);
}

FLOCK_NCCL_API ncclResult_t ncclReduceScatter(const void* send, void* recv, size_t recvcount, ncclDataType_t dtype,
                                              ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return submit("ncclReduceScatter", comm, Call{Kind::ReduceScatter, send, recv, recvcount, dtype, op, 0, 0}, stream);
}

FLOCK_NCCL_API ncclResult_t ncclSend(const void* send, size_t count, ncclDataType_t dtype, int peer, ncclComm_t comm,
                                     cudaStream_t stream) {
  return submit("ncclSend", comm, Call{Kind::Send, send, nullptr, count, dtype, 0, peer, 0}, stream);
}

FLOCK_NCCL_API ncclResult_t ncclRecv(void* recv, size_t count, ncclDataType_t dtype, int peer, ncclComm_t comm,
                                     cudaStream_t stream) {
  return submit("ncclRecv", comm, Call{Kind::Recv, nullptr, recv, count, dtype, 0, peer, 0}, stream);
}
