// Device exports: the virtual CPU device count and events between CPU device streams.
#include "../event.h"
#include "addon.h"
#include "convert.h"

namespace flock::js {
namespace {

const napi_type_tag kEventTag = {0x3c9e2b7a51d04f68ULL, 0x7d1e5a3b9c2f4e01ULL};

struct EventHandle {
  std::shared_ptr<Event> event;
  Device device;
};

std::shared_ptr<Event> event_arg(const Args& a, size_t i) {
  Napi::Value v = a.at(i);
  if (!v.IsExternal() || !v.As<Napi::Object>().CheckTypeTag(&kEventTag))
    fail(Code::Arg, a.op, ": expected an event handle, got ", describe(v));
  return v.As<Napi::External<EventHandle>>().Data()->event;
}

Napi::Value CpuDeviceCount(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), cpu_device_count()); }

Napi::Value SetCpuDeviceCount(const Napi::CallbackInfo& info) {
  Args a{info, "setCpuDeviceCount"};
  set_cpu_device_count(static_cast<int>(a.integer(0, "count", 1, kMaxCpuDevices)));
  return info.Env().Undefined();
}

// eventRecord(device): an event set once the work queued on `device` so far has run.
Napi::Value EventRecord(const Napi::CallbackInfo& info) {
  Args a{info, "recordEvent"};
  const Device d = a.device(0);
  auto* h = new EventHandle{record_event(d), d};
  auto ext = Napi::External<EventHandle>::New(info.Env(), h, [](Napi::Env, EventHandle* e) { delete e; });
  ext.TypeTag(&kEventTag);
  return ext;
}

// eventWait(event, device): later work on `device` waits for the event.
Napi::Value EventWait(const Napi::CallbackInfo& info) {
  Args a{info, "Event.wait"};
  auto e = event_arg(a, 0);
  wait_event(a.device(1), std::move(e), "Event.wait");
  return info.Env().Undefined();
}

Napi::Value EventQuery(const Napi::CallbackInfo& info) {
  Args a{info, "Event.query"};
  return Napi::Boolean::New(info.Env(), event_arg(a, 0)->query());
}

// eventSync(event): a promise resolved (from the stream that sets it) once the event is set.
Napi::Value EventSync(const Napi::CallbackInfo& info) {
  Args a{info, "Event.synchronize"};
  auto e = event_arg(a, 0);
  return Addon::of(info.Env()).promise_from(info.Env(), [e](Addon::Settle settle) {
    e->on_set([e, settle = std::move(settle)] { settle(e->failure()); });
  });
}

}  // namespace

}  // namespace flock::js

#include "../generated/register_devices.inc"
