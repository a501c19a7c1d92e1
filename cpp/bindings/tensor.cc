// Tensor exports: creation, metadata, disposal, reads (the sync points), memory and runtime info.
#include <cmath>
#include "../cpu/gemm.h"
#include "../cpu/isa.h"
#include "../cpu/threadpool.h"
#include "../gpu_runtime.h"
#include "../ops/ops.h"
#include "addon.h"
#include "convert.h"
#include "../generated/random_codes.h"

namespace flock::js {
namespace {

Napi::Value FromBuffer(const Napi::CallbackInfo& info) {
  Args a{info, "tensor"};
  Napi::Value v = info[0];
  const void* data = nullptr;
  size_t bytes = 0;
  if (v.IsTypedArray()) {
    Napi::TypedArray ta = v.As<Napi::TypedArray>();
    data = static_cast<const uint8_t*>(ta.ArrayBuffer().Data()) + ta.ByteOffset();
    bytes = ta.ByteLength();
  } else if (v.IsArrayBuffer()) {
    data = v.As<Napi::ArrayBuffer>().Data();
    bytes = v.As<Napi::ArrayBuffer>().ByteLength();
  } else {
    fail(Code::Arg, "tensor: data must be a TypedArray or ArrayBuffer, got ", describe(v));
  }
  Shape shape = a.shape(1, "shape");
  DType dtype = a.dtype(2);
  Device device = a.device(3);
  return Addon::of(info.Env()).wrap(info.Env(), ops::from_host(data, bytes, shape, dtype, device));
}

Napi::Value Meta(const Napi::CallbackInfo& info) {
  Args a{info, "meta"};
  Addon& addon = Addon::of(info.Env());
  const uint32_t m = addon.meta.index_of(info.Env(), a.tensor_even_failed(0, "tensor"));  // metadata only
  // The cache slot may be the one holding the metadata of the handle returned last: a call that
  // returns several handles (a state-dict read) has them wrapped in order, and the earlier ones ask
  // here. That handle then asks here too, instead of reading a slot this call may have rewritten.
  if (m == addon.returned[0]) addon.returned[1] = -1;
  return addon.meta.metas(info.Env()).Get(m);
}

// Whether a value of a handle's form names no live tensor (disposed); anything else is refused.
Napi::Value IsDisposed(const Napi::CallbackInfo& info) {
  Napi::Value v = info[0];
  if (!v.IsNumber() || !HandleTable::well_formed(v.As<Napi::Number>().DoubleValue()))
    fail(Code::Arg, "isDisposed: expected a tensor, got ", describe(v));
  return Napi::Boolean::New(info.Env(), Addon::of(info.Env()).handles.find(v.As<Napi::Number>().DoubleValue()) == nullptr);
}

// Releases each handle given (one or an array); handles already disposed are skipped.
Napi::Value Dispose(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Addon& addon = Addon::of(env);
  auto one = [&](Napi::Value v, int64_t k) {
    if (!v.IsNumber() || !HandleTable::well_formed(v.As<Napi::Number>().DoubleValue())) {
      if (k < 0) fail(Code::Arg, "dispose: expected a tensor, got ", describe(v));
      fail(Code::Arg, "dispose: expected tensors, got ", describe(v), " at [", k, "]");
    }
    addon.dispose(env, v.As<Napi::Number>().DoubleValue());
  };
  Napi::Value v = info[0];
  if (v.IsArray()) {
    Napi::Array arr = v.As<Napi::Array>();
    for (uint32_t k = 0; k < arr.Length(); ++k) one(arr.Get(k), k);
  } else {
    one(v, -1);
  }
  return env.Undefined();
}

Napi::Value Read(const Napi::CallbackInfo& info) {
  Args a{info, "data"};
  const Tensor& t = a.tensor(0, "tensor");
  auto bytes = std::make_shared<std::vector<uint8_t>>(t.nbytes());
  ops::copy_to_host(t, bytes);
  return Addon::of(info.Env()).when_done(info.Env(), t.device(), bytes);
}

Napi::Value ReadSync(const Napi::CallbackInfo& info) {
  Args a{info, "dataSync"};
  const Tensor& t = a.tensor(0, "tensor");
  auto bytes = std::make_shared<std::vector<uint8_t>>(t.nbytes());
  ops::copy_to_host(t, bytes);
  Addon::of(info.Env()).context.stream(t.device()).synchronize();
  Napi::ArrayBuffer buf = Napi::ArrayBuffer::New(info.Env(), bytes->size());
  if (!bytes->empty()) std::memcpy(buf.Data(), bytes->data(), bytes->size());
  return buf;
}

Napi::Value Sync(const Napi::CallbackInfo& info) {
  Args a{info, "sync"};
  return Addon::of(info.Env()).when_done(info.Env(), a.device(0), nullptr);
}

// Like sync, resolving with the time (epoch_ms, in an ArrayBuffer) at which the stream reached this
// point: when the device finished the work queued before it, free of the JS thread's delay.
Napi::Value SyncTime(const Napi::CallbackInfo& info) {
  Args a{info, "syncTime"};
  Addon& addon = Addon::of(info.Env());
  Stream& stream = addon.context.stream(a.device(0));
  auto stamp = std::make_shared<std::vector<uint8_t>>(sizeof(double));
  return addon.promise_from(
      info.Env(), [&stream, stamp](Addon::Settle settle) { stream.notify(stamped(std::move(settle), stamp)); }, stamp);
}

Napi::Value SyncSync(const Napi::CallbackInfo& info) {
  Args a{info, "syncSync"};
  Addon::of(info.Env()).context.stream(a.device(0)).synchronize();
  return info.Env().Undefined();
}

Napi::Value Memory(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Addon& addon = Addon::of(env);
  Napi::Object out = Napi::Object::New(env);
  auto put = [&](Device d) {
    DeviceMemory& m = memory_of(d);
    Napi::Object o = Napi::Object::New(env);
    o.Set("tensors", static_cast<double>(addon.handles.live(live_slot(d))));
    o.Set("bytes", static_cast<double>(m.bytes.load()));
    o.Set("peakBytes", static_cast<double>(m.peak.load()));
    o.Set("storages", static_cast<double>(m.storages.load()));
    o.Set("cachedBytes", static_cast<double>(cached_bytes(d)));
    out.Set(d.str(), o);
  };
  put(Device{DeviceType::CPU, 0});
  for (int i = 1; i < cpu_device_count(); ++i) put(Device{DeviceType::CPU, i});
  const int n = gpu_device_count();
  for (int i = 0; i < n && i < kMaxCudaDevices; ++i) put(Device{DeviceType::CUDA, i});
  return out;
}

// resetPeakMemory(device): the peak restarts from the bytes in use now.
Napi::Value ResetPeakMemory(const Napi::CallbackInfo& info) {
  Args a{info, "resetPeakMemory"};
  DeviceMemory& m = memory_of(a.device(0));
  m.peak.store(m.bytes.load());
  return info.Env().Undefined();
}

// setErrorClasses(typeErrorClass, rangeErrorClass, errorClass): the constructors, each called as
// `new C(code, message)`, that every native error is made with from now on.
Napi::Value SetErrorClasses(const Napi::CallbackInfo& info) {
  auto& classes = Addon::of(info.Env()).error_classes;
  for (size_t i = 0; i < classes.size(); ++i)
    FLOCK_CHECK(info[i].IsFunction(), Arg, "setErrorClasses: argument ", i, " must be a class");
  for (size_t i = 0; i < classes.size(); ++i) classes[i] = Napi::Persistent(info[i].As<Napi::Function>());
  return info.Env().Undefined();
}

Napi::Value NumThreads(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), cpu::total_threads()); }

Napi::Value SetNumThreads(const Napi::CallbackInfo& info) {
  Args a{info, "setNumThreads"};
  const int64_t n = a.integer(0, "threads", 1, 1024);
  Addon::of(info.Env()).context.synchronize_all();
  cpu::set_num_threads(static_cast<int>(n));
  return info.Env().Undefined();
}

Napi::Value BuildInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object o = Napi::Object::New(env);
  GpuRuntime& rt = gpu_runtime();
  o.Set("cuda", rt.device_count != nullptr);
  o.Set("cudaVersion", rt.version ? rt.version() : std::string());
  o.Set("sgemm", cpu::sgemm_isa());
  o.Set("cpuIsa", cpu::isa_name(cpu::cpu_isa()));
  o.Set("cpuIsaDetected", cpu::isa_name(cpu::detected_isa()));
  o.Set("bf16gemm", cpu::bf16_gemm_available() ? "avx512_bf16" : "f32-widen");
  o.Set("threads", cpu::total_threads());
  o.Set("cpuDevices", cpu_device_count());
  o.Set("cudaSim", rt.sim_state != nullptr);
  return o;
}

// The simulator's state (JSON text), or undefined in an addon that drives real GPUs.
Napi::Value CudaSimState(const Napi::CallbackInfo& info) {
  GpuRuntime& rt = gpu_runtime();
  if (!rt.sim_state) return info.Env().Undefined();
  return Napi::String::New(info.Env(), rt.sim_state());
}

Napi::Value CudaSimFail(const Napi::CallbackInfo& info) {
  Args a{info, "cudaSimFail"};
  const std::string spec = a.string(0, "spec");
  GpuRuntime& rt = gpu_runtime();
  if (!rt.sim_set_faults) fail(Code::Device, "cudaSimFail: this addon drives real GPUs, not the CUDA simulator");
  rt.sim_set_faults(spec);
  return info.Env().Undefined();
}

Napi::Value GpuDeviceCount(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), gpu_device_count()); }

Napi::Value GpuDeviceName(const Napi::CallbackInfo& info) {
  Args a{info, "deviceName"};
  const int64_t i = a.integer(0, "index", 0, kMaxCudaDevices - 1);
  if (i >= gpu_device_count()) fail(Code::Device, "deviceName: no CUDA device ", i, " (", gpu_device_count(), " found)");
  return Napi::String::New(info.Env(), gpu_runtime().device_name(static_cast<int>(i)));
}

Napi::Value GpuMemoryInfo(const Napi::CallbackInfo& info) {
  Args a{info, "memoryInfo"};
  const int64_t i = a.integer(0, "index", 0, kMaxCudaDevices - 1);
  if (i >= gpu_device_count()) fail(Code::Device, "memoryInfo: no CUDA device ", i, " (", gpu_device_count(), " found)");
  int64_t free_b = 0, total_b = 0;
  gpu_runtime().memory_info(static_cast<int>(i), &free_b, &total_b);
  Napi::Object o = Napi::Object::New(info.Env());
  o.Set("free", static_cast<double>(free_b));
  o.Set("total", static_cast<double>(total_b));
  return o;
}

Napi::Value AllowTf32(const Napi::CallbackInfo& info) {
  return Napi::Boolean::New(info.Env(), Addon::of(info.Env()).context.allow_tf32.load());
}

Napi::Value SetAllowTf32(const Napi::CallbackInfo& info) {
  Args a{info, "setAllowTF32"};
  Addon::of(info.Env()).context.allow_tf32.store(a.boolean(0, "allow"));
  return info.Env().Undefined();
}

}  // namespace

}  // namespace flock::js

#include "../generated/register_tensor.inc"
