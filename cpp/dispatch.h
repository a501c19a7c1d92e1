// The op table: for each kernel family, one function per device type. Kernels register with one
// line each (FLOCK_REGISTER_KERNEL) next to their definition; ops look them up by device when they
// are called, before queuing work, so a device without the kernel throws ERR_DEVICE at the call
// rather than at the next sync point.
#pragma once
#include "device.h"
#include "error.h"

namespace flock {

template <class Fn>
struct KernelTable {
  const char* name;
  Fn fns[kNumDeviceTypes] = {};
  Fn get(Device d) const {
    Fn f = fns[static_cast<int>(d.type)];
    if (!f) fail(Code::Device, name, ": no kernel for device ", d.str(), " in this build");
    return f;
  }
};

// Declares a kernel family's signature and defines its table: one table per family in the whole
// addon (an inline function's static is shared by every file that includes the declaration), so
// a family needs no second list of definitions to stay in step with its declarations.
#define FLOCK_DECLARE_KERNEL(family, signature)          \
  using family##_fn = signature;                         \
  inline KernelTable<family##_fn*>& family##_table() {   \
    static KernelTable<family##_fn*> table{#family, {}}; \
    return table;                                        \
  }

#define FLOCK_REGISTER_KERNEL(family, device, fn)    \
  static const bool family##_##device##_registered = \
      (::flock::family##_table().fns[static_cast<int>(::flock::DeviceType::device)] = fn, true)

}  // namespace flock
