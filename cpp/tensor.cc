#include "tensor.h"
#include <unistd.h>
#include <cstdlib>

namespace flock {
namespace {

Allocator* g_allocators[kNumDeviceTypes] = {nullptr, nullptr};
DeviceMemory g_cpu_memory;
DeviceMemory g_cuda_memory[kMaxCudaDevices];

// Larger requests than physical memory fail fast with ERR_OOM instead of being overcommitted.
size_t physical_memory() {
  static const size_t total = static_cast<size_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<size_t>(sysconf(_SC_PAGE_SIZE));
  return total;
}

struct CpuAllocator final : Allocator {
  void* allocate(size_t bytes, int) override {
    if (bytes > physical_memory()) return nullptr;
    // 64-byte alignment suits AVX-512 loads and keeps rows of packed panels on cache lines.
    return std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  }
  void release(void* p, size_t, int) noexcept override { std::free(p); }
};
CpuAllocator g_cpu_allocator;
const bool g_cpu_registered = (g_allocators[0] = &g_cpu_allocator, true);

}  // namespace

void register_allocator(DeviceType t, Allocator* a) { g_allocators[static_cast<int>(t)] = a; }

DeviceMemory& memory_of(Device d) {
  if (d.is_cpu()) return g_cpu_memory;
  if (d.index < 0 || d.index >= kMaxCudaDevices) fail(Code::Device, "device ", d.str(), " is out of range");
  return g_cuda_memory[d.index];
}

Storage::Storage(Device d, size_t n) : device(d), bytes(n) {
  Allocator* a = g_allocators[static_cast<int>(d.type)];
  if (!a) fail(Code::Device, "device ", d.str(), " is not available in this build");
  if (n > 0) {
    data = a->allocate(n, d.index);
    if (!data) fail(Code::OOM, "out of memory on ", d.str(), ": could not allocate ", n, " bytes");
  }
  DeviceMemory& m = memory_of(d);
  int64_t now = m.bytes.fetch_add(static_cast<int64_t>(n)) + static_cast<int64_t>(n);
  int64_t peak = m.peak.load();
  while (now > peak && !m.peak.compare_exchange_weak(peak, now)) {}
  m.storages.fetch_add(1);
}

Storage::~Storage() {
  if (data) g_allocators[static_cast<int>(device.type)]->release(data, bytes, device.index);
  DeviceMemory& m = memory_of(device);
  m.bytes.fetch_sub(static_cast<int64_t>(bytes));
  m.storages.fetch_sub(1);
}

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

int64_t checked_numel(const Shape& shape, const char* op) {
  if (shape.size() > 16) fail(Code::Shape, op, ": at most 16 dimensions are supported, got ", shape.size());
  int64_t n = 1;
  for (int64_t s : shape) {
    if (s < 0) fail(Code::Shape, op, ": negative size in shape ", shape_str(shape));
    if (s != 0 && n > (int64_t(1) << 48) / s) fail(Code::OOM, op, ": shape ", shape_str(shape), " is too large to allocate");
    n *= s;
  }
  return n;
}

Tensor empty(const Shape& shape, DType dtype, Device device, const char* op) {
  int64_t n = checked_numel(shape, op);
  Tensor t;
  t.storage = std::make_shared<Storage>(device, static_cast<size_t>(n) * dtype_size(dtype));
  t.dtype = dtype;
  t.shape = shape;
  return t;
}

}  // namespace flock
