// The JS handles of tensors: plain numbers naming slots of one table per addon instance, so an op
// result costs JS no object, wrap or finalizer. lib/tensor.ts's Tensor holds the number, disposes
// it, or registers it with a FinalizationRegistry when no tidy scope will. A handle is
// kHandleBase + generation * 2^24 + slot: the generation changes each time a slot is reused, so a
// stale number is refused as disposed rather than naming another tensor, and the base keeps
// handles apart from the small numbers (dims, sizes) ops also take.
//
// Each op returns the handle and writes what lib/tensor.ts needs to build a Tensor without another
// native call into `returned` (a Float64Array): [metadata index, handle]. The metadata (a frozen
// { shape, dtype, device } shared by the handles of one shape, dtype and device) sits at that index
// of the `metas` array, a cache of the recent ones. JS thread only.
#pragma once
#include <napi.h>
#include <array>
#include <cstdint>
#include <vector>
#include "../tensor.h"

namespace flock::js {

constexpr double kHandleBase = 281474976710656.0;  // 2^48
constexpr uint32_t kSlotBits = 24;
constexpr uint32_t kMaxSlots = 1u << kSlotBits;
constexpr uint32_t kGenerations = 1u << 24;  // generation * 2^24 + slot < 2^48: handles stay below 2^49

class MetaCache {
 public:
  // The index into `metas` of `t`'s metadata object (made and stored there on a miss).
  uint32_t index_of(Napi::Env env, const Tensor& t);
  Napi::Array metas(Napi::Env env);

 private:
  struct Entry {
    Shape shape;
    DType dtype = DType::f32;
    int device_slot = -1;
    bool used = false;
  };
  Napi::Reference<Napi::Array> metas_;
  std::array<Entry, 64> entries_;
};

class HandleTable {
 public:
  // A new handle owning one reference to `t`.
  double add(Tensor t);
  // The tensor `handle` names, or null when it names none (disposed, stale, or no handle).
  const Tensor* find(double handle) const;
  // Whether `handle` has the form of a handle (it may still be disposed).
  static bool well_formed(double handle) {
    return handle >= kHandleBase && handle < kHandleBase * 2 && handle == static_cast<double>(static_cast<int64_t>(handle));
  }
  // Drops the reference and returns the bytes its tensor held, or -1 when `handle` named no live tensor.
  int64_t release(double handle);
  // Live handles on the device of `live_slot` (see live_slot()).
  int64_t live(int slot) const { return live_[static_cast<size_t>(slot)]; }
  // Bytes of the tensors live handles name (for V8's external memory accounting).
  int64_t bytes() const { return bytes_; }

 private:
  struct Slot {
    Tensor tensor;
    uint32_t generation = 0;
    bool used = false;
  };
  std::vector<Slot> slots_;
  std::vector<uint32_t> free_;
  std::array<int64_t, kMaxCpuDevices + kMaxCudaDevices> live_{};
  int64_t bytes_ = 0;
};

}  // namespace flock::js
