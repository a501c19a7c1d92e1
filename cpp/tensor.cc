#include "tensor.h"
#include "spin_lock.h"
#include "stream_failure.h"
#include <sys/mman.h>
#include <unistd.h>
#include <array>
#include <cstdlib>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace flock {
namespace {

Allocator* g_allocators[kNumDeviceTypes] = {nullptr, nullptr};
DeviceMemory g_cpu_memory[kMaxCpuDevices];
DeviceMemory g_cuda_memory[kMaxCudaDevices];

// Larger requests than physical memory fail fast with ERR_OOM instead of being overcommitted.
size_t physical_memory() {
  static const size_t total = static_cast<size_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<size_t>(sysconf(_SC_PAGE_SIZE));
  return total;
}

// CPU memory: 64-byte aligned blocks (AVX-512 loads; rows of packed GEMM panels on cache lines).
// Every released block is kept and handed to the next request of its size class. Above 4 KiB,
// glibc maps larger blocks fresh and unmaps them on free (its mmap threshold starts at 128 KiB and
// moves, so which sizes do varies from run to run), and gives the top of its heap back to the
// kernel: each new activation of a training step would otherwise pay a page fault per 4 KiB on
// first touch — in a virtual machine most of the time of an element-wise op over a few hundred
// kilobytes (a [128,784] bf16 cast took 8 or 210 us by the luck of the threshold).
// Blocks of up to 4 KiB, up to 16384 of each 64-byte class per device, are kept too: a small op's
// output (a [16] add) otherwise pays a glibc aligned allocation and free, with their
// consolidation, every call (and a step of small ops frees its temporaries together).
// FLOCKML_CPU_CACHE_MB bounds what is kept (default 1024; 0 turns the cache off); a failed
// allocation empties the cache and retries. Each virtual CPU device keeps its own blocks (reported
// and emptied per device); the bound is on all of them together.
class CpuAllocator final : public Allocator {
 public:
  CpuAllocator() {
    const char* env = std::getenv("FLOCKML_CPU_CACHE_MB");
    if (env && *env) limit_ = static_cast<size_t>(std::strtoull(env, nullptr, 10)) << 20;
  }
  void* allocate(size_t bytes, int device) override {
    if (bytes > physical_memory()) return nullptr;
    const size_t n = size_class(bytes);
    if (cacheable(n)) {
      std::lock_guard<SpinLock> lk(m_);
      if (std::vector<void*>* free = list_locked(slot(device), n, false); free && !free->empty()) {
        void* p = free->back();
        free->pop_back();
        cached_[slot(device)] -= n;
        total_ -= n;
        return p;
      }
    }
    void* p = fresh(n);
    if (!p && empty_all() > 0) p = fresh(n);
    return p;
  }
  void release(void* p, size_t bytes, int device) noexcept override {
    const size_t n = size_class(bytes);
    if (cacheable(n)) {
      std::lock_guard<SpinLock> lk(m_);
      if (total_ + n <= limit_) {
        try {
          std::vector<void*>& free = *list_locked(slot(device), n, true);
          if (!is_small(n) || free.size() < kSmallKept) {
            free.push_back(p);
            cached_[slot(device)] += n;
            total_ += n;
            return;
          }
        } catch (...) {  // no room to remember it: free it instead
        }
      }
    }
    std::free(p);
  }
  size_t cached_bytes(int device) override {
    std::lock_guard<SpinLock> lk(m_);
    return cached_[slot(device)];
  }
  size_t empty_cache(int device) noexcept override {
    std::lock_guard<SpinLock> lk(m_);
    return empty_locked(slot(device));
  }
  size_t empty_all() noexcept {
    std::lock_guard<SpinLock> lk(m_);
    size_t was = 0;
    for (int d = 0; d < kMaxCpuDevices; ++d) was += empty_locked(d);
    return was;
  }

 private:
  static constexpr size_t kSmallMax = 4096, kSmallKept = 16384;
  static bool is_small(size_t n) { return n <= kSmallMax; }
  static bool cacheable(size_t n) { return n >= 64; }
  // The free list of size class `n` on device slot `d` (m_ held): a fixed one per small class, a
  // map entry for large ones, made only when `make` (which may throw).
  std::vector<void*>* list_locked(int d, size_t n, bool make) {
    if (is_small(n)) return &small_[d][n / 64 - 1];
    if (make) return &free_[d][n];
    auto it = free_[d].find(n);
    return it == free_[d].end() ? nullptr : &it->second;
  }
  static constexpr size_t kHugePage = size_t(2) << 20;

  // Blocks of 4 MiB and up start on a 2 MiB boundary and ask for transparent huge pages (where
  // the kernel gives them only on request): 512 times fewer page faults on first touch and TLB
  // misses on every pass over a large tensor.
  static void* fresh(size_t n) {
    if (n < 2 * kHugePage) return std::aligned_alloc(64, n);
    void* p = nullptr;
    if (posix_memalign(&p, kHugePage, n) != 0) return nullptr;
    madvise(p, n, MADV_HUGEPAGE);  // advice only: without THP it changes nothing
    return p;
  }
  // Rounds to 64 bytes, and above kSmallMax up to an eighth of the size's power of two, so at most
  // 12.5% is wasted and repeated shapes land in one class.
  static size_t size_class(size_t bytes) {
    size_t n = (bytes + 63) / 64 * 64;
    if (n <= kSmallMax) return n;
    size_t e = kSmallMax;
    while (e * 2 <= n) e *= 2;
    const size_t step = e / 8;
    return (n + step - 1) / step * step;
  }
  static int slot(int device) { return device >= 0 && device < kMaxCpuDevices ? device : 0; }
  size_t empty_locked(int d) noexcept {
    const size_t was = cached_[d];
    for (auto& [n, blocks] : free_[d])
      for (void* p : blocks) std::free(p);
    free_[d].clear();
    for (auto& blocks : small_[d]) {
      for (void* p : blocks) std::free(p);
      blocks.clear();
    }
    cached_[d] = 0;
    total_ -= was;
    return was;
  }
  SpinLock m_;
  std::array<std::unordered_map<size_t, std::vector<void*>>, kMaxCpuDevices> free_;
  std::array<std::array<std::vector<void*>, kSmallMax / 64>, kMaxCpuDevices> small_;
  std::array<size_t, kMaxCpuDevices> cached_{};
  size_t total_ = 0;  // the sum of cached_
  size_t limit_ = size_t(1024) << 20;
};
CpuAllocator g_cpu_allocator;
const bool g_cpu_registered = (g_allocators[0] = &g_cpu_allocator, true);

}  // namespace

void register_allocator(DeviceType t, Allocator* a) { g_allocators[static_cast<int>(t)] = a; }

size_t cached_bytes(Device d) {
  Allocator* a = g_allocators[static_cast<int>(d.type)];
  return a ? a->cached_bytes(d.index) : 0;
}

size_t empty_cache(Device d) {
  Allocator* a = g_allocators[static_cast<int>(d.type)];
  return a ? a->empty_cache(d.index) : 0;
}

DeviceMemory& memory_of(Device d) {
  if (d.is_cpu()) {
    if (d.index < 0 || d.index >= kMaxCpuDevices) fail(Code::Device, "device ", d.str(), " is out of range");
    return g_cpu_memory[d.index];
  }
  if (d.index < 0 || d.index >= kMaxCudaDevices) fail(Code::Device, "device ", d.str(), " is out of range");
  return g_cuda_memory[d.index];
}

namespace {

// Fault injection for tests: the allocation after this many more fails (-1: never).
// FLOCKML_FAIL_ALLOC_AFTER=N sets it at start-up, fail_alloc_after() at run time.
std::atomic<int64_t>& alloc_countdown() {
  static std::atomic<int64_t> n{[] {
    const char* env = std::getenv("FLOCKML_FAIL_ALLOC_AFTER");
    return env && *env ? static_cast<int64_t>(std::strtoll(env, nullptr, 10)) : int64_t(-1);
  }()};
  return n;
}

bool injected_failure() {
  std::atomic<int64_t>& n = alloc_countdown();
  int64_t left = n.load(std::memory_order_relaxed);
  while (left >= 0) {
    if (n.compare_exchange_weak(left, left - 1, std::memory_order_relaxed)) return left == 0;
  }
  return false;
}

// Takes `n` bytes for a storage on `d` and counts them (bytes in use and the peak).
void* take(Device d, size_t n) {
  if (injected_failure())
    fail(Code::OOM, "out of memory on ", d.str(), ": could not allocate ", n, " bytes (injected by FLOCKML_FAIL_ALLOC_AFTER)");
  void* p = g_allocators[static_cast<int>(d.type)]->allocate(n, d.index);
  if (!p) fail(Code::OOM, "out of memory on ", d.str(), ": could not allocate ", n, " bytes");
  DeviceMemory& m = memory_of(d);
  const int64_t now = m.bytes.fetch_add(static_cast<int64_t>(n)) + static_cast<int64_t>(n);
  int64_t peak = m.peak.load();
  while (now > peak && !m.peak.compare_exchange_weak(peak, now)) {
  }
  return p;
}

}  // namespace

void fail_alloc_after(int64_t n) { alloc_countdown().store(n < 0 ? -1 : n, std::memory_order_relaxed); }

Storage::Storage(Device d, size_t n) : device(d), bytes(n) {
  if (!g_allocators[static_cast<int>(d.type)]) fail(Code::Device, "device ", d.str(), " is not available in this build");
  DeviceMemory& m = memory_of(d);
  if (n > 0 && !d.is_cpu()) data_.store(take(d, n), std::memory_order_release);
  // More than the machine has fails now, at the op that asked, not later on the stream.
  if (d.is_cpu() && n > physical_memory()) fail(Code::OOM, "out of memory on ", d.str(), ": could not allocate ", n, " bytes");
  m.storages.fetch_add(1);
}

void* Storage::materialize() const {
  void* p = take(device, bytes);
  void* expected = nullptr;
  if (data_.compare_exchange_strong(expected, p, std::memory_order_acq_rel)) return p;
  // Another thread took memory for this storage first: keep its block, give this one back.
  g_allocators[static_cast<int>(device.type)]->release(p, bytes, device.index);
  memory_of(device).bytes.fetch_sub(static_cast<int64_t>(bytes));
  return expected;
}

void Storage::mark_failed(const StreamError& e) {
  if (failed_.load(std::memory_order_acquire)) return;
  if (!failure_.load(std::memory_order_acquire)) {
    auto* mine = new StreamError{e.code, e.message, e.ack};
    StreamError* expected = nullptr;
    if (!failure_.compare_exchange_strong(expected, mine, std::memory_order_acq_rel)) delete mine;
  }
  failed_.store(true, std::memory_order_release);
}

void Storage::clear_failure() { failed_.store(false, std::memory_order_release); }

Storage::~Storage() {
  delete failure_.load(std::memory_order_acquire);
  DeviceMemory& m = memory_of(device);
  if (void* p = data_.load(std::memory_order_acquire)) {
    g_allocators[static_cast<int>(device.type)]->release(p, bytes, device.index);
    m.bytes.fetch_sub(static_cast<int64_t>(bytes));
  }
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

namespace {

// Storages (each with its shared_ptr control block, one allocation) come from a free list: a step
// of small ops frees its temporaries together, and glibc's frees of thousands of small chunks, with
// the consolidation they set off, cost more than the ops' kernels. Up to 64 Ki blocks are kept;
// the list is never destroyed, since storages may be released while the process exits.
template <size_t Size>
class BlockPool {
 public:
  static BlockPool& get() {
    static BlockPool* pool = new BlockPool;
    return *pool;
  }
  void* take() {
    {
      std::lock_guard<SpinLock> lk(m_);
      if (!free_.empty()) {
        void* p = free_.back();
        free_.pop_back();
        return p;
      }
    }
    return ::operator new(Size);
  }
  void give(void* p) noexcept {
    {
      std::lock_guard<SpinLock> lk(m_);
      if (free_.size() < kKept) {
        try {
          free_.push_back(p);
          return;
        } catch (...) {  // no room to remember it: free it instead
        }
      }
    }
    ::operator delete(p);
  }

 private:
  static constexpr size_t kKept = size_t(1) << 16;
  SpinLock m_;
  std::vector<void*> free_;
};

template <class T>
struct PooledAllocator {
  using value_type = T;
  PooledAllocator() = default;
  template <class U>
  PooledAllocator(const PooledAllocator<U>&) noexcept {}
  T* allocate(size_t n) {
    if (n != 1) return std::allocator<T>().allocate(n);
    static_assert(alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__, "pooled blocks have operator new's alignment");
    return static_cast<T*>(BlockPool<sizeof(T)>::get().take());
  }
  void deallocate(T* p, size_t n) noexcept {
    if (n != 1) return std::allocator<T>().deallocate(p, n);
    BlockPool<sizeof(T)>::get().give(p);
  }
  template <class U>
  bool operator==(const PooledAllocator<U>&) const noexcept {
    return true;
  }
};

}  // namespace

Tensor empty(const Shape& shape, DType dtype, Device device, const char* op) {
  int64_t n = checked_numel(shape, op);
  Tensor t;
  t.storage = std::allocate_shared<Storage>(PooledAllocator<Storage>(), device, static_cast<size_t>(n) * dtype_size(dtype));
  t.dtype = dtype;
  t.shape = shape;
  OpScope::record(t.storage);
  return t;
}

}  // namespace flock
