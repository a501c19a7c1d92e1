// safetensors exports. Tensor bytes go between device memory and the file in native code only.
// save: CPU tensors are written straight from their storage by a task on the CPU stream, so the
// write follows the work that produces them and work queued later (an optimizer step updating
// the weights in place) waits for it; CUDA tensors are first staged to host memory in stream
// order. load: a worker thread reads the header and each tensor's bytes into a fresh CPU tensor
// (one copy, straight from the file); for a CUDA target the JS thread then queues the upload.
// The JS thread never waits on the disk in the async forms.
#include <condition_variable>
#include <mutex>
#include <set>
#include <unordered_map>
#include <thread>
#include "../io/safetensors.h"
#include "../ops/ops.h"
#include "addon.h"
#include "convert.h"

namespace flock::js {
namespace {

std::vector<std::string> string_list(const Args& a, size_t i, const char* name) {
  Napi::Value v = a.at(i);
  if (!v.IsArray()) fail(Code::Arg, a.op, ": ", name, " must be an array of strings, got ", describe(v));
  Napi::Array arr = v.As<Napi::Array>();
  std::vector<std::string> out;
  out.reserve(arr.Length());
  for (uint32_t k = 0; k < arr.Length(); ++k) {
    Napi::Value e = arr.Get(k);
    if (!e.IsString()) fail(Code::Arg, a.op, ": ", name, "[", k, "] must be a string, got ", describe(e));
    out.push_back(e.As<Napi::String>().Utf8Value());
  }
  return out;
}

io::Metadata metadata_arg(const Args& a, size_t i) {
  io::Metadata out;
  Napi::Value v = a.at(i);
  if (v.IsUndefined() || v.IsNull()) return out;
  if (!v.IsObject() || v.IsArray()) fail(Code::Arg, a.op, ": metadata must be an object of strings, got ", describe(v));
  Napi::Object o = v.As<Napi::Object>();
  Napi::Array keys = o.GetPropertyNames();
  for (uint32_t k = 0; k < keys.Length(); ++k) {
    Napi::Value key = keys.Get(k);
    Napi::Value val = o.Get(key);
    const std::string name = key.ToString().Utf8Value();
    if (!val.IsString()) fail(Code::Arg, a.op, ": metadata['", name, "'] must be a string, got ", describe(val));
    out.emplace_back(name, val.As<Napi::String>().Utf8Value());
  }
  return out;
}

struct SaveJob {
  std::string path;
  std::vector<io::WriteEntry> entries;
  io::Metadata metadata;
  std::vector<std::shared_ptr<std::vector<uint8_t>>> staged;  // host copies of CUDA tensors
  std::set<int> cuda_devices;
  std::set<int> cpu_devices;  // CPU devices besides cpu:0 whose streams produce some of the tensors
};

std::shared_ptr<SaveJob> save_job(const Args& a) {
  auto job = std::make_shared<SaveJob>();
  job->path = a.string(0, "path");
  const std::vector<std::string> names = string_list(a, 1, "names");
  std::vector<Tensor> tensors = a.tensors(2, "tensors");
  if (names.size() != tensors.size()) fail(Code::Arg, a.op, ": ", names.size(), " names for ", tensors.size(), " tensors");
  job->metadata = metadata_arg(a, 3);
  for (size_t i = 0; i < names.size(); ++i) job->entries.push_back({names[i], std::move(tensors[i]), nullptr});
  io::make_header(job->entries, job->metadata, a.op);  // name errors are thrown here, synchronously
  return job;
}

// Queues device-to-host copies of the CUDA tensors (in their streams' order).
void stage_device_tensors(SaveJob& job) {
  for (io::WriteEntry& e : job.entries) {
    if (e.tensor.device().is_cpu()) {
      if (e.tensor.device().index != 0) job.cpu_devices.insert(e.tensor.device().index);
      continue;
    }
    auto buf = std::make_shared<std::vector<uint8_t>>(e.tensor.nbytes());
    ops::copy_to_host(e.tensor, buf);
    e.host = buf->data();
    job.staged.push_back(std::move(buf));
    job.cuda_devices.insert(e.tensor.device().index);
  }
}

std::optional<StreamError> write_job(const SaveJob& job, const char* op) {
  try {
    io::write_safetensors(job.path, job.entries, job.metadata, op);
    return std::nullopt;
  } catch (const Error& e) {
    return StreamError{e.code, e.what()};
  } catch (const std::bad_alloc&) {
    return StreamError{Code::OOM, std::string(op) + ": out of memory"};
  } catch (const std::exception& e) {
    return StreamError{Code::Internal, std::string(op) + ": " + e.what()};
  }
}

// Waits for `count` streams to report, keeping the first error.
class Latch {
 public:
  explicit Latch(size_t count) : count_(count) {}
  void arrive(std::optional<StreamError> err) {
    std::lock_guard<std::mutex> lk(m_);
    if (err && !error_) error_ = std::move(err);
    if (--count_ == 0) cv_.notify_all();
  }
  std::optional<StreamError> wait() {
    std::unique_lock<std::mutex> lk(m_);
    cv_.wait(lk, [&] { return count_ == 0; });
    return error_;
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  size_t count_;
  std::optional<StreamError> error_;
};

// save(path, names, tensors, metadata): resolves once the file is durably in place.
Napi::Value Save(const Napi::CallbackInfo& info) {
  Args a{info, "save"};
  std::shared_ptr<SaveJob> job = save_job(a);
  Addon& addon = Addon::of(info.Env());
  Context& ctx = addon.context;
  stage_device_tensors(*job);
  return addon.promise_from(info.Env(), [&ctx, job](Addon::Settle settle) {
    auto latch = std::make_shared<Latch>(job->cuda_devices.size() + job->cpu_devices.size());
    for (int d : job->cuda_devices)
      ctx.stream(Device{DeviceType::CUDA, d}).notify([latch](std::optional<StreamError> err) { latch->arrive(std::move(err)); });
    for (int d : job->cpu_devices)
      ctx.stream(Device{DeviceType::CPU, d}).notify([latch](std::optional<StreamError> err) { latch->arrive(std::move(err)); });
    // The write runs on the CPU stream, after the work that produces the CPU tensors; an error that
    // work captured fails the save (its bytes would be garbage) and is reported here.
    ctx.stream(Device{}).notify([job, latch, settle](std::optional<StreamError> err) {
      std::optional<StreamError> staged = latch->wait();
      if (!err) err = std::move(staged);
      if (!err) err = write_job(*job, "save");
      settle(std::move(err));
    });
  });
}

Napi::Value SaveSync(const Napi::CallbackInfo& info) {
  Args a{info, "saveSync"};
  std::shared_ptr<SaveJob> job = save_job(a);
  Context& ctx = Addon::of(info.Env()).context;
  stage_device_tensors(*job);
  for (int d : job->cuda_devices) ctx.stream(Device{DeviceType::CUDA, d}).synchronize();
  for (int d : job->cpu_devices) ctx.stream(Device{DeviceType::CPU, d}).synchronize();
  ctx.stream(Device{}).synchronize();  // the JS thread is held, so nothing new can be queued meanwhile
  if (auto err = write_job(*job, "saveSync")) throw Error(err->code, err->message);
  return info.Env().Undefined();
}

struct ReadJob {
  std::string path;
  Device device;
  bool all = true;  // every tensor, else those named in `select`
  std::vector<std::string> select;
  io::Header header;
  std::vector<size_t> chosen;   // indices into header.tensors, in result order
  std::vector<Tensor> tensors;  // CPU tensors holding the bytes read
  std::optional<StreamError> error;
  std::optional<Napi::Promise::Deferred> deferred;
};

std::shared_ptr<ReadJob> read_job(const Args& a) {
  auto job = std::make_shared<ReadJob>();
  job->path = a.string(0, "path");
  job->device = a.device(1);
  Addon::of(a.info.Env()).context.stream(job->device);  // an unavailable device fails now
  if (!a.at(2).IsNull() && !a.at(2).IsUndefined()) {
    job->all = false;
    job->select = string_list(a, 2, "names");
  }
  return job;
}

// The disk part of a read; runs on a worker thread for load, on the JS thread for loadSync.
void run_read(ReadJob& job, const char* op) {
  try {
    io::SafetensorsReader reader(job.path, op);
    job.header = reader.header();
    const auto& ts = job.header.tensors;
    if (job.all) {
      for (size_t i = 0; i < ts.size(); ++i) job.chosen.push_back(i);
    } else {
      std::unordered_map<std::string, size_t> index;
      for (size_t i = 0; i < ts.size(); ++i) index.emplace(ts[i].name, i);
      for (const std::string& name : job.select) {
        auto it = index.find(name);
        if (it == index.end()) fail(Code::Arg, op, ": ", job.path, " holds no tensor '", name, "'");
        job.chosen.push_back(it->second);
      }
    }
    std::vector<std::pair<const io::TensorInfo*, void*>> work;
    for (size_t i : job.chosen) {
      Tensor t = empty(ts[i].shape, ts[i].dtype, job.device.is_cpu() ? job.device : Device{}, op);
      work.emplace_back(&ts[i], t.raw());
      job.tensors.push_back(std::move(t));
    }
    reader.read_many(work);
  } catch (const Error& e) {
    job.error = StreamError{e.code, e.what()};
  } catch (const std::bad_alloc&) {
    job.error = StreamError{Code::OOM, std::string(op) + ": out of memory reading " + job.path};
  } catch (const std::exception& e) {
    job.error = StreamError{Code::Internal, std::string(op) + ": " + e.what()};
  }
  if (job.error) job.tensors.clear();
}

// { headerBytes, dataBytes, metadata, tensors: [{name, dtype, shape, begin, end}], handles }.
Napi::Object read_result(Napi::Env env, ReadJob& job, const char* op) {
  Addon& addon = Addon::of(env);
  Napi::Object out = Napi::Object::New(env);
  out.Set("headerBytes", static_cast<double>(job.header.header_bytes));
  out.Set("dataBytes", static_cast<double>(job.header.data_bytes));
  Napi::Object meta = Napi::Object::New(env);
  for (const auto& [k, v] : job.header.metadata) meta.Set(k, v);
  out.Set("metadata", meta);
  Napi::Array infos = Napi::Array::New(env, job.header.tensors.size());
  for (size_t i = 0; i < job.header.tensors.size(); ++i) {
    const io::TensorInfo& t = job.header.tensors[i];
    Napi::Object o = Napi::Object::New(env);
    o.Set("name", t.name);
    o.Set("dtype", dtype_name(t.dtype));
    Napi::Array shape = Napi::Array::New(env, t.shape.size());
    for (size_t d = 0; d < t.shape.size(); ++d) shape.Set(static_cast<uint32_t>(d), static_cast<double>(t.shape[d]));
    o.Set("shape", shape);
    o.Set("begin", static_cast<double>(t.begin));
    o.Set("end", static_cast<double>(t.end));
    infos.Set(static_cast<uint32_t>(i), o);
  }
  out.Set("tensors", infos);
  Napi::Array names = Napi::Array::New(env, job.chosen.size());
  Napi::Array handles = Napi::Array::New(env, job.chosen.size());
  for (size_t k = 0; k < job.chosen.size(); ++k) {
    Tensor host = std::move(job.tensors[k]);
    Tensor placed = host;
    if (!job.device.is_cpu()) {
      // The upload path of ops::from_host without its extra staging copy: the host tensor is the
      // staging buffer, kept alive by the queued task until the copy has run.
      placed = empty(host.shape, host.dtype, job.device, op);
      auto kernel = copy_from_host_table().get(placed.device());
      ops::enqueue(op, job.device, [host, placed, kernel]() mutable { kernel(host.raw(), placed); });
    }
    names.Set(static_cast<uint32_t>(k), job.header.tensors[job.chosen[k]].name);
    handles.Set(static_cast<uint32_t>(k), addon.wrap(env, std::move(placed)));
  }
  out.Set("names", names);
  out.Set("handles", handles);
  return out;
}

void finish_read(Napi::Env env, ReadJob& job) {
  Napi::Promise::Deferred& deferred = *job.deferred;
  if (job.error) {
    deferred.Reject(make_js_error(env, job.error->code, job.error->message).Value());
    return;
  }
  try {
    deferred.Resolve(read_result(env, job, "load"));
  } catch (const Error& e) {
    deferred.Reject(make_js_error(env, e.code, e.what()).Value());
  } catch (const Napi::Error& e) {
    deferred.Reject(e.Value());
  } catch (const std::bad_alloc&) {
    deferred.Reject(make_js_error(env, Code::OOM, "load: out of memory").Value());
  } catch (const std::exception& e) {
    deferred.Reject(make_js_error(env, Code::Internal, std::string("load: ") + e.what()).Value());
  }
}

// read(path, device, names | null): resolves with the header and the selected tensors on `device`
// (names = [] reads the header only).
Napi::Value Read(const Napi::CallbackInfo& info) {
  Args a{info, "load"};
  Napi::Env env = info.Env();
  std::shared_ptr<ReadJob> job = read_job(a);
  job->deferred.emplace(Napi::Promise::Deferred::New(env));
  Napi::Promise promise = job->deferred->Promise();
  // One thread-safe function per read: it keeps the process alive until the read settles.
  auto tsfn =
      Napi::ThreadSafeFunction::New(env, Napi::Function::New(env, [](const Napi::CallbackInfo&) {}), "flockml.load", 0, 1);
  try {
    std::thread([job, tsfn]() mutable {
      run_read(*job, "load");
      tsfn.BlockingCall([job](Napi::Env env, Napi::Function) { finish_read(env, *job); });
      tsfn.Release();
    }).detach();
  } catch (...) {
    tsfn.Release();
    throw;
  }
  return promise;
}

Napi::Value ReadSync(const Napi::CallbackInfo& info) {
  Args a{info, "loadSync"};
  std::shared_ptr<ReadJob> job = read_job(a);
  run_read(*job, "loadSync");
  if (job->error) throw Error(job->error->code, job->error->message);
  return read_result(info.Env(), *job, "loadSync");
}

}  // namespace

}  // namespace flock::js

#include "../generated/register_io.inc"
