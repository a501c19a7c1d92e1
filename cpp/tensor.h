// Storage (a refcounted device buffer) and Tensor (dtype, shape and an element offset into a
// storage). Tensors are always row-major contiguous; views share storage through the offset.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>
#include "device.h"
#include "dtype.h"
#include "shape.h"

namespace flock {

// Allocates and frees raw memory for one device type.
struct Allocator {
  virtual ~Allocator() = default;
  virtual void* allocate(size_t bytes, int device_index) = 0;
  virtual void release(void* p, size_t bytes, int device_index) noexcept = 0;
  // Memory kept for reuse after release, and giving it back (returns how much was given back).
  virtual size_t cached_bytes(int /*device_index*/) { return 0; }
  virtual size_t empty_cache(int /*device_index*/) noexcept { return 0; }
};
void register_allocator(DeviceType t, Allocator* a);
// The allocator of `d`'s device type: its cache (see Allocator), 0 where there is none.
size_t cached_bytes(Device d);
size_t empty_cache(Device d);

// A CPU storage takes its memory on first use, not when it is made: an op's output is made when
// the JS thread queues the op, which may be a whole training step ahead of the stream, but memory
// is taken when the stream runs the op's kernel and given back when the last queued kernel that
// uses it has run. So memory is held in the stream's order, as if every op ran when it was called
// (as PyTorch's CPU ops do, and as its CUDA caching allocator reuses memory in stream order), and
// fl.memory()'s peak is what the program needs, not what the queue holds. CUDA storages take
// theirs when made (allocation binds to the device of the calling thread).
struct Storage {
  Device device;
  size_t bytes = 0;
  Storage(Device d, size_t n);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  // The memory (nullptr when bytes is 0); takes it on first use, from any thread.
  void* data() const {
    void* p = data_.load(std::memory_order_acquire);
    return p || bytes == 0 ? p : materialize();
  }
  // Set when the task that was to write this storage failed or was dropped (stream_failure.h):
  // what reading it throws. Null while the storage is good.
  const StreamError* failure() const {
    return failed_.load(std::memory_order_acquire) ? failure_.load(std::memory_order_acquire) : nullptr;
  }
  // The first mark wins; thread-safe.
  void mark_failed(const StreamError& e);
  // A write that covers the whole storage (fill_) makes it good again.
  void clear_failure();

 private:
  void* materialize() const;
  mutable std::atomic<void*> data_{nullptr};
  // Kept until the storage dies once set (a reader on another thread may hold it); failed_ says
  // whether it applies.
  std::atomic<StreamError*> failure_{nullptr};
  std::atomic<bool> failed_{false};
};

struct Tensor {
  std::shared_ptr<Storage> storage;
  DType dtype = DType::f32;
  Shape shape;
  int64_t offset = 0;  // in elements

  int64_t numel() const;
  int64_t dim() const { return static_cast<int64_t>(shape.size()); }
  Device device() const { return storage->device; }
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype); }
  void* raw() const { return static_cast<char*>(storage->data()) + offset * static_cast<int64_t>(dtype_size(dtype)); }
  template <class T>
  T* data() const {
    return static_cast<T*>(raw());
  }
};

// Checks a shape (non-negative, finite, product fits) and returns its element count.
int64_t checked_numel(const Shape& shape, const char* op);
// A new uninitialised tensor on `device`.
Tensor empty(const Shape& shape, DType dtype, Device device, const char* op = "empty");

struct DeviceMemory {
  std::atomic<int64_t> bytes{0};
  std::atomic<int64_t> peak{0};
  std::atomic<int64_t> storages{0};
};
DeviceMemory& memory_of(Device d);
// Test hook: the (n+1)-th storage allocation from now fails with ERR_OOM; -1 turns it off.
void fail_alloc_after(int64_t n);
constexpr int kMaxCudaDevices = 16;

}  // namespace flock
