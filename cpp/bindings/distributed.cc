// Distributed exports: process-group handles and collectives. A ring collective is queued behind
// the compute already on its tensors' stream (Stream::notify), then handed to the group's
// communication thread; an nccl collective orders itself on the device (the group enqueues on the
// tensors' stream). Either way its promise settles through Addon::promise_from, and the JS thread
// never touches a socket.
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include "../distributed/local_group.h"
#include "../distributed/process_group.h"
#include "../distributed/ps_buffer.h"
#include "../kernels.h"
#include "../ops/ops.h"
#include "../gpu_runtime.h"
#include "addon.h"
#include "convert.h"
#include "../generated/reduce_codes.h"

namespace flock::js {
namespace {

const napi_type_tag kGroupTag = {0x8f3b5c1d2e4a6b70ULL, 0x1a2b3c4d5e6f7081ULL};

struct GroupHandle {
  std::shared_ptr<dist::ProcessGroup> group;
};

Napi::External<GroupHandle> wrap_group(Napi::Env env, std::shared_ptr<dist::ProcessGroup> g) {
  auto* h = new GroupHandle{std::move(g)};
  auto ext = Napi::External<GroupHandle>::New(env, h, [](Napi::Env, GroupHandle* g) { delete g; });
  ext.TypeTag(&kGroupTag);
  return ext;
}

std::shared_ptr<dist::ProcessGroup> group_arg(const Args& a, size_t i) {
  Napi::Value v = a.at(i);
  if (!v.IsExternal() || !v.As<Napi::Object>().CheckTypeTag(&kGroupTag))
    fail(Code::Arg, a.op, ": expected a process group handle, got ", describe(v));
  auto* h = v.As<Napi::External<GroupHandle>>().Data();
  if (!h->group) fail(Code::Disposed, a.op, ": the process group has been destroyed");
  return h->group;
}

std::shared_ptr<dist::RingGroup> ring_arg(const Args& a, size_t i) {
  auto g = std::dynamic_pointer_cast<dist::RingGroup>(group_arg(a, i));
  if (!g) fail(Code::Arg, a.op, ": expected a ring process group");
  return g;
}

dist::ReduceOp reduce_op(const Args& a, size_t i) { return a.enumeration<dist::ReduceOp>(i, "op", dist::kReduceOpNames, 5); }

// Every collective's promise resolves with the time it finished (see stamped() in addon.h), taken
// on the thread that saw it finish: Work.completedAt measures overlap with compute without the JS
// thread's own delay in running callbacks.
//
// An `ordered` collective also holds back the work queued on `device` after it until it has
// finished (as a collective issued on an NCCL compute stream does, or PyTorch's async_op=False):
// its result can be used by the next op without awaiting the Work. The stream's worker waits on a
// condition variable, never the JS thread; a failed collective fails that wait with its error,
// which reaches the next sync point. Unordered collectives let later compute overlap them (DDP's
// buckets), and their result may be read only once the Work has resolved.
struct Gate {
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
  std::optional<StreamError> error;
  Addon::Settle settle;  // of a failed collective: settled by the gate task (below)
};

// A failed ordered collective fails its stream when the gate task meets it, and its Work rejects
// only then, carrying that failure's acknowledgement: the rejection is the JS thread's word of both.
Addon::Settle opening(std::shared_ptr<Gate> gate, Addon::Settle settle) {
  return [gate = std::move(gate), settle = std::move(settle)](std::optional<StreamError> err) {
    {
      std::lock_guard<std::mutex> lk(gate->m);
      gate->done = true;
      gate->error = err;
      if (err) gate->settle = settle;
    }
    gate->cv.notify_all();
    if (!err) settle(std::nullopt);
  };
}

// Runs `issue(done)` on a stream thread once everything queued on `device` before now has run.
// When that earlier work failed (stream_failure.h), the collective is still issued, under the
// failure: its header says so, and it fails on every rank (ERR_PEER_FAILED on the others), so
// the ranks stay in step and none applies the step.
// The failure a collective is posted under: its stream's (`err`, from notify), else that of an
// input whose producing task failed or was dropped.
// Either carries its acknowledgement: the collective's rejection on this rank tells the JS thread.
std::optional<StreamError> posted_failure(std::optional<StreamError> err, const std::vector<Tensor>& inputs) {
  if (err) return err;
  for (const Tensor& t : inputs)
    if (const StreamError* f = t.storage->failure()) return *f;
  return std::nullopt;
}

Napi::Value after_compute(const Napi::CallbackInfo& info, const char* op, Device device, bool ordered, std::vector<Tensor> inputs,
                          std::function<void(dist::Done)> issue) {
  Addon& addon = Addon::of(info.Env());
  Stream& stream = addon.context.stream(device);
  auto stamp = std::make_shared<std::vector<uint8_t>>(sizeof(double));
  auto gate = ordered ? std::make_shared<Gate>() : nullptr;
  Napi::Value promise = addon.promise_from(
      info.Env(),
      [&stream, stamp, gate, inputs, issue = std::move(issue)](Addon::Settle settle) {
        settle = stamped(std::move(settle), stamp);
        if (gate) settle = opening(gate, std::move(settle));
        stream.notify([issue, settle, inputs](std::optional<StreamError> err) {
          const std::optional<StreamError> failure = posted_failure(std::move(err), inputs);
          ControlTaskScope scope(failure ? &*failure : nullptr);
          try {
            issue(settle);
          } catch (const Error& e) {
            settle(StreamError{e.code, e.what()});
          }
        });
      },
      stamp);
  if (gate)  // a control task: later work waits for the collective even on a failed stream
    stream.enqueue(
        op,
        [gate]() {
          std::unique_lock<std::mutex> lk(gate->m);
          gate->cv.wait(lk, [&] { return gate->done; });
          if (!gate->error) return;
          const StreamError e = *gate->error;
          on_task_failure([settle = std::move(gate->settle), e](const StreamError& mark) {
            settle(StreamError{e.code, e.message, mark.ack});
          });
          throw Error(e.code, e.message);
        },
        true);
  return promise;
}

// Issues a collective: straight away for a group that orders itself on the device (argument errors
// throw here; later work on the device is ordered after it anyway), else after the compute queued
// on `device`. The collective's optional last argument is `ordered` (see after_compute).
//
// NCCL has no call header to say that a rank's step failed: a collective posted by a failed
// stream (or from a failed tensor) aborts the communicator instead, so every rank's collective
// fails (the watcher reports it within the group's timeout) and none applies the step; the group
// must be made anew. In-process groups say it themselves (local_group.cc).
Napi::Value collective(const Napi::CallbackInfo& info, const Args& a, size_t ordered_at, dist::ProcessGroup& g, Device device,
                       std::vector<Tensor> inputs, std::function<void(dist::Done)> issue) {
  const bool ordered = info.Length() > ordered_at && !info[ordered_at].IsUndefined() && a.boolean(ordered_at, "ordered");
  if (!g.orders_on_device()) return after_compute(info, a.op, device, ordered, std::move(inputs), std::move(issue));
  if (std::string(g.backend()) == "nccl") {
    if (auto f = posted_failure(Addon::of(info.Env()).context.stream(device).failure(), inputs)) {
      g.abort(std::string(a.op) + " on rank " + std::to_string(g.rank()) + " was posted after a failure: " + f->message);
      return Addon::of(info.Env()).promise_from(info.Env(), [&](Addon::Settle settle) { settle(std::move(f)); });
    }
  }
  auto stamp = std::make_shared<std::vector<uint8_t>>(sizeof(double));
  return Addon::of(info.Env())
      .promise_from(
          info.Env(), [&](Addon::Settle settle) { issue(stamped(std::move(settle), stamp)); }, stamp);
}

Napi::Value RingListen(const Napi::CallbackInfo& info) {
  Args a{info, "ringListen"};
  const int rank = static_cast<int>(a.integer(0, "rank", 0, 1 << 20));
  const int size = static_cast<int>(a.integer(1, "size", 1, 1 << 20));
  const std::string host = a.string(2, "host");
  const int timeout = static_cast<int>(a.integer(3, "timeoutMs", 1, int64_t(1) << 30));
  const std::string name = info.Length() > 4 ? a.string(4, "name") : "";
  auto g = dist::RingGroup::listen(rank, size, host, timeout, name);
  Napi::Env env = info.Env();
  Napi::Object o = Napi::Object::New(env);
  o.Set("group", wrap_group(env, g));
  o.Set("port", g->port());
  return o;
}

Napi::Value RingConnect(const Napi::CallbackInfo& info) {
  Args a{info, "ringConnect"};
  auto g = ring_arg(a, 0);
  Napi::Value hv = info[1];
  if (!hv.IsArray()) fail(Code::Arg, "ringConnect: hosts must be an array of strings");
  Napi::Array hosts = hv.As<Napi::Array>();
  std::vector<int64_t> ports = a.ints(2, "ports", 0, 65535, 1u << 20);
  if (hosts.Length() != ports.size()) fail(Code::Arg, "ringConnect: ", hosts.Length(), " hosts but ", ports.size(), " ports");
  std::vector<dist::PeerAddress> peers;
  for (uint32_t i = 0; i < hosts.Length(); ++i) {
    Napi::Value h = hosts.Get(i);
    if (!h.IsString()) fail(Code::Arg, "ringConnect: hosts[", i, "] must be a string, got ", describe(h));
    peers.push_back({h.As<Napi::String>().Utf8Value(), static_cast<int>(ports[i])});
  }
  // A POSIX shared-memory name: one leading slash, no other, at most NAME_MAX.
  std::string shm = info.Length() > 3 ? a.string(3, "shmName") : "";
  if (!shm.empty() && (shm[0] != '/' || shm.size() < 2 || shm.size() > 255 || shm.find('/', 1) != std::string::npos))
    fail(Code::Arg, "ringConnect: shmName must be '/' followed by a name without '/', got '", shm, "'");
  // The host index of each rank, for a group that spans hosts (hier_group.h).
  std::vector<int> host_of;
  if (info.Length() > 4 && !info[4].IsUndefined()) {
    for (int64_t h : a.ints(4, "hostOf", 0, static_cast<int64_t>(ports.size()) - 1, 1u << 20))
      host_of.push_back(static_cast<int>(h));
    if (host_of.size() != ports.size())
      fail(Code::Arg, "ringConnect: ", host_of.size(), " host indices but ", ports.size(), " ports");
    if (shm.empty()) fail(Code::Arg, "ringConnect: hostOf needs a shmName");
  }
  return Addon::of(info.Env()).promise_from(info.Env(), [&](Addon::Settle settle) {
    g->connect(std::move(peers), std::move(shm), std::move(host_of), settle);
  });
}

Napi::Value RingTransport(const Napi::CallbackInfo& info) {
  Args a{info, "ringTransport"};
  return Napi::String::New(info.Env(), ring_arg(a, 0)->transport());
}

Napi::Value AllReduce(const Napi::CallbackInfo& info) {
  Args a{info, "allReduce"};
  auto g = group_arg(a, 0);
  Tensor t = a.tensor_even_failed(1, "tensor");
  auto op = reduce_op(a, 2);
  return collective(info, a, 3, *g, t.device(), {t}, [g, t, op](dist::Done d) { g->allreduce(t, op, std::move(d)); });
}

Napi::Value Broadcast(const Napi::CallbackInfo& info) {
  Args a{info, "broadcast"};
  auto g = group_arg(a, 0);
  Tensor t = a.tensor_even_failed(1, "tensor");
  const int root = static_cast<int>(a.integer(2, "root", 0, g->size() - 1));
  return collective(info, a, 3, *g, t.device(), {t}, [g, t, root](dist::Done d) { g->broadcast(t, root, std::move(d)); });
}

Napi::Value AllGather(const Napi::CallbackInfo& info) {
  Args a{info, "allGather"};
  auto g = group_arg(a, 0);
  Tensor in = a.tensor_even_failed(1, "input"), out = a.tensor_even_failed(2, "output");
  return collective(info, a, 3, *g, in.device(), {in}, [g, in, out](dist::Done d) { g->allgather(in, out, std::move(d)); });
}

Napi::Value ReduceScatter(const Napi::CallbackInfo& info) {
  Args a{info, "reduceScatter"};
  auto g = group_arg(a, 0);
  Tensor in = a.tensor_even_failed(1, "input"), out = a.tensor_even_failed(2, "output");
  auto op = reduce_op(a, 3);
  return collective(info, a, 4, *g, in.device(), {in},
                    [g, in, out, op](dist::Done d) { g->reduce_scatter(in, out, op, std::move(d)); });
}

Napi::Value Send(const Napi::CallbackInfo& info) {
  Args a{info, "send"};
  auto g = group_arg(a, 0);
  Tensor t = a.tensor_even_failed(1, "tensor");
  const int peer = static_cast<int>(a.integer(2, "dst", 0, g->size() - 1));
  return collective(info, a, 3, *g, t.device(), {t}, [g, t, peer](dist::Done d) { g->send(t, peer, std::move(d)); });
}

Napi::Value Recv(const Napi::CallbackInfo& info) {
  Args a{info, "recv"};
  auto g = group_arg(a, 0);
  Tensor t = a.tensor_even_failed(1, "tensor");
  const int peer = static_cast<int>(a.integer(2, "src", 0, g->size() - 1));
  return collective(info, a, 3, *g, t.device(), {}, [g, t, peer](dist::Done d) { g->recv(t, peer, std::move(d)); });
}

Napi::Value Barrier(const Napi::CallbackInfo& info) {
  Args a{info, "barrier"};
  auto g = group_arg(a, 0);
  return collective(info, a, 1, *g, Device{}, {}, [g](dist::Done d) { g->barrier(std::move(d)); });
}

Napi::Value SetTimeout(const Napi::CallbackInfo& info) {
  Args a{info, "setTimeout"};
  group_arg(a, 0)->set_timeout(static_cast<int>(a.integer(1, "timeoutMs", 1, int64_t(1) << 30)));
  return info.Env().Undefined();
}

Napi::Value Destroy(const Napi::CallbackInfo& info) {
  Args a{info, "destroyGroup"};
  auto g = group_arg(a, 0);
  g->abort("the process group was destroyed");
  info[0].As<Napi::External<GroupHandle>>().Data()->group.reset();  // the thread ends with the last owner
  return info.Env().Undefined();
}

Napi::Value NcclInfo(const Napi::CallbackInfo& info) {
  std::string why;
  const bool ok = dist::nccl_available(&why);
  Napi::Object o = Napi::Object::New(info.Env());
  o.Set("available", ok);
  o.Set("reason", why);
  o.Set("version", dist::nccl_version());  // "" when the library does not load
  return o;
}

Napi::Value NcclUniqueId(const Napi::CallbackInfo& info) {
  const dist::NcclId id = dist::nccl_unique_id();
  return Napi::Buffer<char>::Copy(info.Env(), id.data(), id.size());
}

// Fails with the reason when the backend cannot be used here at all.
void require_nccl(const char* op) {
  std::string why;
  if (!dist::nccl_backend().init_rank || !dist::nccl_available(&why)) fail(Code::Nccl, op, ": nccl unavailable: ", why);
}

int timeout_arg(const Args& a, size_t i) { return static_cast<int>(a.integer(i, "timeoutMs", 1, int64_t(1) << 30)); }

Napi::Value NcclInitRank(const Napi::CallbackInfo& info) {
  Args a{info, "ncclInitRank"};
  const int size = static_cast<int>(a.integer(1, "size", 1, 1 << 20));
  const int rank = static_cast<int>(a.integer(0, "rank", 0, size - 1));
  const int device = static_cast<int>(a.integer(2, "device", 0, kMaxCudaDevices - 1));
  Napi::Value idv = info[3];
  if (!idv.IsTypedArray() || idv.As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array)
    fail(Code::Arg, "ncclInitRank: id must be a Uint8Array, got ", describe(idv));
  Napi::Uint8Array idarr = idv.As<Napi::Uint8Array>();
  dist::NcclId id;
  if (idarr.ByteLength() != id.size())
    fail(Code::Arg, "ncclInitRank: id must hold ", id.size(), " bytes, got ", idarr.ByteLength());
  std::copy(idarr.Data(), idarr.Data() + id.size(), reinterpret_cast<uint8_t*>(id.data()));
  const int timeout = timeout_arg(a, 4);
  require_nccl("ncclInitRank");
  if (device >= gpu_device_count())
    fail(Code::Device, "ncclInitRank: no CUDA device ", device, " (", gpu_device_count(), " found)");
  Napi::Env env = info.Env();
  std::shared_ptr<dist::ProcessGroup> g;
  Napi::Promise ready = Addon::of(env).promise_from(
      env, [&](Addon::Settle settle) { g = dist::nccl_backend().init_rank(rank, size, device, id, timeout, std::move(settle)); });
  Napi::Object o = Napi::Object::New(env);
  o.Set("group", wrap_group(env, g));
  o.Set("ready", ready);
  return o;
}

Napi::Value NcclInitAll(const Napi::CallbackInfo& info) {
  Args a{info, "ncclInitAll"};
  const std::vector<int64_t> devs = a.ints(0, "devices", 0, kMaxCudaDevices - 1);
  const int timeout = timeout_arg(a, 1);
  if (devs.empty()) fail(Code::Arg, "ncclInitAll: devices must list at least one CUDA device index");
  require_nccl("ncclInitAll");
  std::vector<int> devices(devs.begin(), devs.end());
  for (size_t i = 0; i < devices.size(); ++i) {
    if (devices[i] >= gpu_device_count())
      fail(Code::Device, "ncclInitAll: no CUDA device ", devices[i], " (", gpu_device_count(), " found)");
    for (size_t j = 0; j < i; ++j)
      if (devices[j] == devices[i]) fail(Code::Arg, "ncclInitAll: device ", devices[i], " is listed twice");
  }
  Napi::Env env = info.Env();
  std::vector<std::shared_ptr<dist::ProcessGroup>> gs;
  Napi::Promise ready = Addon::of(env).promise_from(
      env, [&](Addon::Settle settle) { gs = dist::nccl_backend().init_all(devices, timeout, std::move(settle)); });
  Napi::Array groups = Napi::Array::New(env, gs.size());
  for (uint32_t i = 0; i < gs.size(); ++i) groups.Set(i, wrap_group(env, gs[i]));
  Napi::Object o = Napi::Object::New(env);
  o.Set("groups", groups);
  o.Set("ready", ready);
  return o;
}

// localInitCpu(devices, timeoutMs): one in-process group per CPU device, ready at once.
Napi::Value LocalInitCpu(const Napi::CallbackInfo& info) {
  Args a{info, "initLocalGroups"};
  Napi::Value dv = info[0];
  if (!dv.IsArray()) fail(Code::Arg, "initLocalGroups: devices must be an array of device strings, got ", describe(dv));
  Napi::Array arr = dv.As<Napi::Array>();
  if (arr.Length() == 0 || arr.Length() > kMaxCpuDevices)
    fail(Code::Arg, "initLocalGroups: devices must list 1 to ", kMaxCpuDevices, " CPU devices, got ", arr.Length());
  std::vector<Device> devices;
  for (uint32_t i = 0; i < arr.Length(); ++i) {
    Napi::Value v = arr.Get(i);
    if (!v.IsString()) fail(Code::Arg, "initLocalGroups: devices[", i, "] must be a string, got ", describe(v));
    devices.push_back(parse_device(v.As<Napi::String>().Utf8Value()));
  }
  const int timeout = timeout_arg(a, 1);
  auto gs = dist::make_local_cpu_groups(devices, timeout);
  Napi::Env env = info.Env();
  Napi::Array groups = Napi::Array::New(env, gs.size());
  for (uint32_t i = 0; i < gs.size(); ++i) groups.Set(i, wrap_group(env, gs[i]));
  return groups;
}

// pgReduce(group, tensor, root, op): the reduction lands in rank `root`'s tensor (local groups).
Napi::Value Reduce(const Napi::CallbackInfo& info) {
  Args a{info, "reduce"};
  auto g = std::dynamic_pointer_cast<dist::LocalCpuGroup>(group_arg(a, 0));
  if (!g) fail(Code::Arg, "reduce: only local CPU groups reduce to one rank natively; use allReduce");
  Tensor t = a.tensor_even_failed(1, "tensor");
  const int root = static_cast<int>(a.integer(2, "root", 0, g->size() - 1));
  auto op = reduce_op(a, 3);
  return collective(info, a, 4, *g, t.device(), {t}, [g, t, root, op](dist::Done d) { g->reduce(t, root, op, std::move(d)); });
}

// ---- a parameter server's shared-memory buffers (lib/parallel/parameter_server/shm.ts) ----
// Each is handed to JS as an external ArrayBuffer over the mapping; psReadInto copies a tensor into
// one once its stream reaches the copy, so the mapping is found by address and kept alive by the
// queued copy as well as by the ArrayBuffer.
std::mutex ps_mutex;
std::map<const void*, std::weak_ptr<dist::PsBuffer>> ps_buffers;

Napi::Value ps_array_buffer(Napi::Env env, std::shared_ptr<dist::PsBuffer> b) {
  {
    std::lock_guard<std::mutex> lock(ps_mutex);
    ps_buffers[b->data()] = b;
  }
  auto* hold = new std::shared_ptr<dist::PsBuffer>(b);
  return Napi::ArrayBuffer::New(
      env, b->data(), b->size(),
      [](Napi::Env, void*, std::shared_ptr<dist::PsBuffer>* h) {
        {
          std::lock_guard<std::mutex> lock(ps_mutex);
          auto it = ps_buffers.find((*h)->data());
          if (it != ps_buffers.end() && it->second.lock() == *h) ps_buffers.erase(it);
        }
        delete h;
      },
      hold);
}

// psShmCreate(name, bytes) / psShmOpen(name, bytes): the mapped buffer as an ArrayBuffer.
Napi::Value PsShmCreate(const Napi::CallbackInfo& info) {
  Args a{info, "ParameterServer"};
  const std::string name = a.string(0, "name");
  const auto bytes = static_cast<size_t>(a.integer(1, "bytes", 1, int64_t(1) << 40));
  return ps_array_buffer(info.Env(), dist::PsBuffer::create(name, bytes));
}

Napi::Value PsShmOpen(const Napi::CallbackInfo& info) {
  Args a{info, "ParameterServer"};
  const std::string name = a.string(0, "name");
  const auto bytes = static_cast<size_t>(a.integer(1, "bytes", 1, int64_t(1) << 40));
  return ps_array_buffer(info.Env(), dist::PsBuffer::open(name, bytes));
}

Napi::Value PsShmUnlink(const Napi::CallbackInfo& info) {
  Args a{info, "ParameterServer"};
  dist::PsBuffer::unlink(a.string(0, "name"));
  return info.Env().Undefined();
}

// psReadInto(tensors, buffer, byteOffset): resolves once the tensors' bytes, as data() reads them,
// lie end to end in the buffer (one psShmCreate/psShmOpen made) from byteOffset. One device.
Napi::Value PsReadInto(const Napi::CallbackInfo& info) {
  Args a{info, "ParameterServer"};
  const std::vector<Tensor> ts = a.tensors(0, "tensors");
  Napi::Value v = a.at(1);
  if (!v.IsArrayBuffer()) fail(Code::Arg, "ParameterServer: expected a shared-memory ArrayBuffer, got ", describe(v));
  const void* base = v.As<Napi::ArrayBuffer>().Data();
  std::shared_ptr<dist::PsBuffer> b;
  {
    std::lock_guard<std::mutex> lock(ps_mutex);
    auto it = base ? ps_buffers.find(base) : ps_buffers.end();
    if (it != ps_buffers.end()) b = it->second.lock();
  }
  if (!b) fail(Code::Arg, "ParameterServer: the buffer is not a parameter server's shared memory");
  const auto offset = static_cast<size_t>(a.integer(2, "byteOffset", 0, static_cast<int64_t>(b->size())));
  if (ts.empty()) fail(Code::Arg, "ParameterServer: no tensors to copy into shared memory");
  size_t at = offset;
  for (const Tensor& t : ts) {
    if (t.device() != ts[0].device())
      fail(Code::Device, "ParameterServer: tensors on ", ts[0].device().str(), " and ", t.device().str(),
           " in one shared-memory copy");
    if (t.nbytes() > b->size() - at)
      fail(Code::Range, "ParameterServer: ", t.nbytes(), " bytes at offset ", at, " overrun a shared-memory buffer of ",
           b->size());
    at += t.nbytes();
  }
  size_t off = offset;
  for (const Tensor& t : ts) {
    auto kernel = copy_to_host_table().get(t.device());
    ops::enqueue("data", t.device(), [t, b, off, kernel]() { kernel(t, b->data() + off); });
    off += t.nbytes();
  }
  return Addon::of(info.Env()).when_done(info.Env(), ts[0].device(), nullptr);
}

}  // namespace

}  // namespace flock::js

#include "../generated/register_distributed.inc"
