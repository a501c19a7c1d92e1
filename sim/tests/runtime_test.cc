// Unit tests of the simulated CUDA runtime (sim/runtime_*.cc): stream order, events, legacy
// stream rules, host functions, stream memory operations, context accounting, memory and pools,
// peer checks, pageable/pinned copies, errors and fault injection. Build and run with
// sim/tests/build_runtime_test.sh. Uses 4 devices: 0 and 1 for healthy work, 2 and 3 are
// poisoned by the sticky-error tests; the context test runs first, before any device is touched.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>
#include "cuda.h"
#include "cuda_runtime.h"
#include "sim.h"

namespace {

int g_passed = 0, g_failed = 0;
bool g_current_ok = true;

#define CHECK(cond)                                                   \
  do {                                                                \
    if (!(cond)) {                                                    \
      std::printf("  FAILED %s:%d: %s\n", __FILE__, __LINE__, #cond); \
      g_current_ok = false;                                           \
    }                                                                 \
  } while (0)
#define CHECK_EQ(a, b)                                                                                \
  do {                                                                                                \
    const long long va_ = static_cast<long long>(a), vb_ = static_cast<long long>(b);                 \
    if (va_ != vb_) {                                                                                 \
      std::printf("  FAILED %s:%d: %s == %s (%lld vs %lld)\n", __FILE__, __LINE__, #a, #b, va_, vb_); \
      g_current_ok = false;                                                                           \
    }                                                                                                 \
  } while (0)

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }
void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

void run(const char* name, void (*fn)()) {
  g_current_ok = true;
  try {
    fn();
  } catch (const std::exception& e) {
    std::printf("  FAILED: threw %s\n", e.what());
    g_current_ok = false;
  }
  cudaGetLastError();
  std::printf("%s %s\n", g_current_ok ? "ok  " : "FAIL", name);
  (g_current_ok ? g_passed : g_failed)++;
}

// A one-thread kernel whose body runs `f`.
void kernel(cudaStream_t s, std::function<void()> f, std::vector<const void*> ptrs = {}, const char* name = "test_kernel") {
  sim::launch(sim::LaunchCfg{dim3(1), dim3(1), 0, s, name}, std::move(f), std::move(ptrs));
}

// A host op on `s` that holds the stream until `open` is set (or 5 s pass).
void gate(cudaStream_t s, std::atomic<bool>* open) {
  sim::enqueue_host_op(s, [open] {
    const auto t = Clock::now();
    while (!open->load() && ms_since(t) < 5000) sleep_ms(1);
  });
}

bool peer_on() {
  const char* v = std::getenv("FLOCKML_CUDA_SIM_PEER");
  return !v || std::strcmp(v, "0") != 0;
}

// ---- contexts (must run first) ----
void test_context_accounting() {
  for (int d = 0; d < 4; ++d) CHECK(!sim::device_stats(d).context);
  std::thread([] {
    int cur = -1, n = 0, can = 0, v = 0;
    cudaDeviceProp p;
    CHECK_EQ(cudaGetDevice(&cur), cudaSuccess);
    CHECK_EQ(cur, 0);
    CHECK_EQ(cudaGetDeviceCount(&n), cudaSuccess);
    CHECK_EQ(n, 4);
    CHECK_EQ(cudaGetDeviceProperties(&p, 0), cudaSuccess);
    CHECK_EQ(p.major, 9);
    CHECK_EQ(cudaDeviceCanAccessPeer(&can, 0, 1), cudaSuccess);
    CHECK_EQ(cudaRuntimeGetVersion(&v), cudaSuccess);
    cudaGetErrorString(cudaErrorInvalidValue);
    cudaGetLastError();
    CHECK(!sim::device_stats(0).context);
    // Everything on cuda:1 from a thread that set it: no context on cuda:0.
    CHECK_EQ(cudaSetDevice(1), cudaSuccess);
    CHECK(sim::device_stats(1).context);
    cudaStream_t s;
    cudaEvent_t e;
    void *p1 = nullptr, *p2 = nullptr, *h = nullptr;
    CHECK_EQ(cudaStreamCreate(&s), cudaSuccess);
    CHECK_EQ(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), cudaSuccess);
    CHECK_EQ(cudaMalloc(&p1, 1024), cudaSuccess);
    CHECK_EQ(cudaMallocAsync(&p2, 1024, s), cudaSuccess);
    CHECK_EQ(cudaMallocHost(&h, 64), cudaSuccess);
    CHECK_EQ(cudaMemsetAsync(p2, 1, 1024, s), cudaSuccess);
    CHECK_EQ(cudaMemcpyAsync(p1, p2, 1024, cudaMemcpyDeviceToDevice, s), cudaSuccess);
    kernel(s, [] {}, {p1, p2});
    CHECK_EQ(cudaGetLastError(), cudaSuccess);
    CHECK_EQ(cudaEventRecord(e, s), cudaSuccess);
    CHECK_EQ(cudaEventSynchronize(e), cudaSuccess);
    CHECK_EQ(cudaFreeAsync(p2, s), cudaSuccess);
    CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
    CHECK_EQ(cudaMemcpy(h, p1, 64, cudaMemcpyDeviceToHost), cudaSuccess);
    CHECK_EQ(cudaFree(p1), cudaSuccess);
    CHECK_EQ(cudaFreeHost(h), cudaSuccess);
    cudaMemPool_t pool;
    CHECK_EQ(cudaDeviceGetDefaultMemPool(&pool, 1), cudaSuccess);
    CHECK_EQ(cudaEventDestroy(e), cudaSuccess);
    CHECK_EQ(cudaStreamDestroy(s), cudaSuccess);
    CHECK_EQ(cudaDeviceSynchronize(), cudaSuccess);
    CHECK(!sim::device_stats(0).context);
    CHECK(!sim::device_stats(2).context);
  }).join();
  CHECK(!sim::device_stats(0).context);
  // The first allocation on a fresh thread's current device (0) creates cuda:0's context.
  std::thread([] {
    void* p = nullptr;
    CHECK_EQ(cudaMalloc(&p, 16), cudaSuccess);
    CHECK(sim::device_stats(0).context);
    cudaFree(p);
  }).join();
  CHECK(!sim::device_stats(3).context);
}

// ---- streams ----
void test_stream_order() {
  cudaStream_t s;
  CHECK_EQ(cudaStreamCreate(&s), cudaSuccess);
  std::vector<int> seen;
  kernel(s, [&] {
    sleep_ms(30);
    seen.push_back(1);
  });
  sim::enqueue_host_op(s, [&] { seen.push_back(2); });
  kernel(s, [&] { seen.push_back(3); });
  CHECK_EQ(cudaStreamQuery(s), cudaErrorNotReady);
  CHECK_EQ(cudaGetLastError(), cudaSuccess);  // not-ready is not an error
  CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
  CHECK((seen == std::vector<int>{1, 2, 3}));
  CHECK_EQ(cudaStreamQuery(s), cudaSuccess);
  CHECK_EQ(sim::device_stats(0).live_streams, 1);
  // Destroy with work pending: it still runs.
  std::atomic<bool> ran{false};
  kernel(s, [&] {
    sleep_ms(20);
    ran = true;
  });
  CHECK_EQ(cudaStreamDestroy(s), cudaSuccess);
  CHECK_EQ(sim::device_stats(0).live_streams, 0);
  CHECK_EQ(cudaStreamSynchronize(s), cudaErrorInvalidResourceHandle);
  CHECK_EQ(cudaDeviceSynchronize(), cudaSuccess);
  CHECK(ran.load());
}

void test_events() {
  cudaStream_t a, b;
  cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking);
  cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking);
  cudaEvent_t e0, e1, nt;
  CHECK_EQ(cudaEventCreate(&e0), cudaSuccess);
  CHECK_EQ(cudaEventCreate(&e1), cudaSuccess);
  CHECK_EQ(cudaEventCreateWithFlags(&nt, cudaEventDisableTiming | cudaEventBlockingSync), cudaSuccess);
  CHECK_EQ(cudaEventQuery(e0), cudaSuccess);  // never recorded
  std::atomic<int> flag{0};
  int seen = -1;
  CHECK_EQ(cudaEventRecord(e0, a), cudaSuccess);
  kernel(a, [&] {
    sleep_ms(40);
    flag = 1;
  });
  CHECK_EQ(cudaEventRecord(e1, a), cudaSuccess);
  CHECK_EQ(cudaEventRecord(nt, a), cudaSuccess);
  CHECK_EQ(cudaStreamWaitEvent(b, e1, 0), cudaSuccess);
  kernel(b, [&] { seen = flag.load(); });
  CHECK_EQ(cudaEventQuery(e1), cudaErrorNotReady);
  float ms = 0;
  CHECK_EQ(cudaEventElapsedTime(&ms, e0, e1), cudaErrorNotReady);
  CHECK_EQ(cudaStreamSynchronize(b), cudaSuccess);
  CHECK_EQ(seen, 1);
  CHECK_EQ(cudaEventSynchronize(e1), cudaSuccess);
  CHECK_EQ(cudaEventQuery(e1), cudaSuccess);
  CHECK_EQ(cudaEventElapsedTime(&ms, e0, e1), cudaSuccess);
  CHECK(ms >= 35 && ms < 2000);
  CHECK_EQ(cudaEventElapsedTime(&ms, e0, nt), cudaErrorInvalidResourceHandle);
  CHECK_EQ(cudaEventElapsedTime(nullptr, e0, e1), cudaErrorInvalidValue);
  // Destroying an event while its record is pending is fine.
  kernel(a, [&] { sleep_ms(20); });
  CHECK_EQ(cudaEventRecord(e0, a), cudaSuccess);
  CHECK_EQ(cudaEventDestroy(e0), cudaSuccess);
  CHECK_EQ(cudaEventQuery(e0), cudaErrorInvalidResourceHandle);
  CHECK_EQ(cudaEventDestroy(e0), cudaErrorInvalidResourceHandle);
  CHECK_EQ(cudaEventRecord(nullptr, a), cudaErrorInvalidResourceHandle);
  // An event belongs to the device it was created on.
  std::thread([&] {
    cudaSetDevice(1);
    cudaStream_t s1;
    cudaStreamCreate(&s1);
    CHECK_EQ(cudaEventRecord(e1, s1), cudaErrorInvalidResourceHandle);
    CHECK_EQ(cudaStreamWaitEvent(s1, e1, 0), cudaSuccess);  // cross-device waits are allowed
    CHECK_EQ(cudaStreamSynchronize(s1), cudaSuccess);
    cudaStreamDestroy(s1);
  }).join();
  CHECK_EQ(cudaStreamSynchronize(a), cudaSuccess);
  cudaEventDestroy(e1);
  cudaEventDestroy(nt);
  cudaStreamDestroy(a);
  cudaStreamDestroy(b);
}

void test_legacy_stream() {
  cudaStream_t blocking, nonblocking;
  cudaStreamCreate(&blocking);
  cudaStreamCreateWithFlags(&nonblocking, cudaStreamNonBlocking);
  // Legacy work waits for earlier blocking-stream work...
  std::atomic<int> x{0};
  int seen_legacy = -1;
  kernel(blocking, [&] {
    sleep_ms(40);
    x = 1;
  });
  kernel(nullptr, [&] { seen_legacy = x.load(); });
  CHECK_EQ(cudaStreamSynchronize(nullptr), cudaSuccess);
  CHECK_EQ(seen_legacy, 1);
  // ...and later blocking-stream work waits for it.
  std::atomic<int> z{0};
  int seen_blocking = -1;
  kernel(cudaStreamLegacy, [&] {
    sleep_ms(40);
    z = 1;
  });
  kernel(blocking, [&] { seen_blocking = z.load(); });
  CHECK_EQ(cudaStreamSynchronize(blocking), cudaSuccess);
  CHECK_EQ(seen_blocking, 1);
  // A non-blocking stream neither waits for the legacy stream nor holds it up.
  std::atomic<bool> open{false};
  gate(nullptr, &open);
  std::atomic<bool> nb_ran{false};
  kernel(nonblocking, [&] { nb_ran = true; });
  const auto t = Clock::now();
  CHECK_EQ(cudaStreamSynchronize(nonblocking), cudaSuccess);
  CHECK(nb_ran.load());
  CHECK(ms_since(t) < 1000);
  open = true;
  std::atomic<bool> gate2{false};
  gate(nonblocking, &gate2);
  int legacy_done = 0;
  kernel(nullptr, [&] { legacy_done = 1; });
  CHECK_EQ(cudaStreamSynchronize(nullptr), cudaSuccess);  // does not wait for the gated non-blocking stream
  CHECK_EQ(legacy_done, 1);
  gate2 = true;
  CHECK_EQ(cudaDeviceSynchronize(), cudaSuccess);
  cudaStreamDestroy(blocking);
  cudaStreamDestroy(nonblocking);
}

void CUDART_CB host_fn(void* p) {
  auto* out = static_cast<cudaError_t*>(p);
  void* q = nullptr;
  out[0] = cudaMalloc(&q, 16);
  cudaStream_t s;
  out[1] = cudaStreamCreate(&s);
  out[2] = cudaGetLastError();
}

void test_host_func() {
  cudaStream_t s;
  cudaStreamCreate(&s);
  cudaError_t inside[3] = {cudaSuccess, cudaSuccess, cudaSuccess};
  std::vector<int> order;
  kernel(s, [&] {
    sleep_ms(20);
    order.push_back(1);
  });
  CHECK_EQ(cudaLaunchHostFunc(s, host_fn, inside), cudaSuccess);
  sim::enqueue_host_op(s, [&] { order.push_back(2); });
  CHECK_EQ(cudaLaunchHostFunc(s, nullptr, nullptr), cudaErrorInvalidValue);
  CHECK_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
  CHECK_EQ(inside[0], cudaErrorNotPermitted);
  CHECK_EQ(inside[1], cudaErrorNotPermitted);
  CHECK_EQ(inside[2], cudaErrorNotPermitted);
  CHECK((order == std::vector<int>{1, 2}));
  CHECK_EQ(cudaGetLastError(), cudaSuccess);  // the callback's errors stay on its own thread
  cudaStreamDestroy(s);
}

void test_stream_values() {
  using MemOp = CUresult (*)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
  void *w = nullptr, *v = nullptr;
  cudaDriverEntryPointQueryResult q1, q2, q3;
  CHECK_EQ(cudaGetDriverEntryPointByVersion("cuStreamWaitValue32", &w, 12000, cudaEnableDefault, &q1), cudaSuccess);
  CHECK_EQ(cudaGetDriverEntryPointByVersion("cuStreamWriteValue32", &v, 12000, cudaEnableDefault, &q2), cudaSuccess);
  CHECK(q1 == cudaDriverEntryPointSuccess && q2 == cudaDriverEntryPointSuccess && w && v);
  void* none = &q3;
  CHECK_EQ(cudaGetDriverEntryPointByVersion("cuNoSuchThing", &none, 12000, cudaEnableDefault, &q3), cudaSuccess);
  CHECK(q3 == cudaDriverEntryPointSymbolNotFound && none == nullptr);
  auto wait = reinterpret_cast<MemOp>(w);
  auto write = reinterpret_cast<MemOp>(v);
  uint32_t* words = nullptr;
  CHECK_EQ(cudaHostAlloc(&words, 16, cudaHostAllocMapped | cudaHostAllocPortable), cudaSuccess);
  uint32_t* dev = nullptr;
  CHECK_EQ(cudaHostGetDevicePointer(&dev, words, 0), cudaSuccess);
  CHECK(dev == words);
  std::memset(words, 0, 16);
  cudaStream_t a, b;
  cudaStreamCreate(&a);
  cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking);
  // A host write opens a GEQ gate.
  std::atomic<bool> passed{false};
  CHECK_EQ(wait(a, reinterpret_cast<CUdeviceptr>(dev), 5, CU_STREAM_WAIT_VALUE_GEQ), CUDA_SUCCESS);
  sim::enqueue_host_op(a, [&] { passed = true; });
  sleep_ms(30);
  CHECK(!passed.load());
  CHECK_EQ(cudaStreamQuery(a), cudaErrorNotReady);
  __atomic_store_n(words, 4u, __ATOMIC_RELEASE);
  sleep_ms(10);
  CHECK(!passed.load());
  __atomic_store_n(words, 7u, __ATOMIC_RELEASE);
  CHECK_EQ(cudaStreamSynchronize(a), cudaSuccess);
  CHECK(passed.load());
  // GEQ is cyclic: 1 is "after" 0xFFFFFFFF.
  __atomic_store_n(words + 1, 1u, __ATOMIC_RELEASE);
  CHECK_EQ(wait(a, reinterpret_cast<CUdeviceptr>(dev + 1), 0xFFFFFFFFu, CU_STREAM_WAIT_VALUE_GEQ), CUDA_SUCCESS);
  CHECK_EQ(cudaStreamSynchronize(a), cudaSuccess);
  // A stream write opens an EQ gate on another stream; AND and NOR.
  CHECK_EQ(wait(a, reinterpret_cast<CUdeviceptr>(dev + 2), 9, CU_STREAM_WAIT_VALUE_EQ), CUDA_SUCCESS);
  CHECK_EQ(wait(a, reinterpret_cast<CUdeviceptr>(dev + 2), 8, CU_STREAM_WAIT_VALUE_AND), CUDA_SUCCESS);
  CHECK_EQ(wait(a, reinterpret_cast<CUdeviceptr>(dev + 3), 0xFFFFFFFEu, CU_STREAM_WAIT_VALUE_NOR), CUDA_SUCCESS);
  sleep_ms(10);
  CHECK_EQ(cudaStreamQuery(a), cudaErrorNotReady);
  CHECK_EQ(write(b, reinterpret_cast<CUdeviceptr>(dev + 2), 9, CU_STREAM_WRITE_VALUE_DEFAULT), CUDA_SUCCESS);
  CHECK_EQ(cudaStreamSynchronize(a), cudaSuccess);
  CHECK_EQ(words[2], 9u);
  // Bad arguments.
  int pageable = 0;
  CHECK_EQ(wait(a, reinterpret_cast<CUdeviceptr>(&pageable), 1, CU_STREAM_WAIT_VALUE_GEQ), CUDA_ERROR_INVALID_VALUE);
  CHECK_EQ(wait(a, reinterpret_cast<CUdeviceptr>(dev), 1, 7), CUDA_ERROR_INVALID_VALUE);
  CHECK_EQ(write(reinterpret_cast<CUstream>(&pageable), reinterpret_cast<CUdeviceptr>(dev), 1, 0), CUDA_ERROR_INVALID_HANDLE);
  cudaStreamDestroy(a);
  cudaStreamDestroy(b);
  CHECK_EQ(cudaFreeHost(words), cudaSuccess);
}

// ---- memory ----
void test_memory_cap() {
  // FLOCKML_CUDA_SIM_MEMORY=64M (main).
  CHECK_EQ(sim::device_stats(0).memory_cap, 64u << 20);
  void *a = nullptr, *b = nullptr;
  CHECK_EQ(cudaMalloc(&a, 40u << 20), cudaSuccess);
  CHECK_EQ(reinterpret_cast<uintptr_t>(a) % 256, 0u);
  CHECK_EQ(static_cast<unsigned char*>(a)[12345], 0xFF);  // FLOCKML_CUDA_SIM_POISON=1
  size_t free_b = 0, total = 0;
  CHECK_EQ(cudaMemGetInfo(&free_b, &total), cudaSuccess);
  CHECK_EQ(total, 64u << 20);
  CHECK(free_b <= (24u << 20));
  CHECK_EQ(cudaMalloc(&b, 30u << 20), cudaErrorMemoryAllocation);
  CHECK(b == nullptr);
  CHECK_EQ(cudaPeekAtLastError(), cudaErrorMemoryAllocation);
  CHECK_EQ(cudaGetLastError(), cudaErrorMemoryAllocation);
  CHECK_EQ(cudaGetLastError(), cudaSuccess);
  CHECK_EQ(cudaFree(a), cudaSuccess);
  CHECK_EQ(cudaFree(a), cudaErrorInvalidValue);  // double free
  CHECK_EQ(cudaMalloc(&b, 30u << 20), cudaSuccess);
  CHECK_EQ(cudaFree(b), cudaSuccess);
  CHECK_EQ(cudaMalloc(nullptr, 16), cudaErrorInvalidValue);
  int x = 0;
  CHECK_EQ(cudaFree(&x), cudaErrorInvalidValue);
}

void test_stream_ordered_pool() {
  std::thread([] {
    cudaSetDevice(1);
    cudaMemPool_t pool;
    CHECK_EQ(cudaDeviceGetDefaultMemPool(&pool, 1), cudaSuccess);
    uint64_t keep = UINT64_MAX, v = 0;
    CHECK_EQ(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep), cudaSuccess);
    cudaStream_t s1, s2;
    cudaStreamCreate(&s1);
    cudaStreamCreate(&s2);
    const size_t mb = 1u << 20;
    std::atomic<bool> open{false};
    gate(s1, &open);
    void *p = nullptr, *q = nullptr, *r = nullptr;
    CHECK_EQ(cudaMallocAsync(&p, mb, s1), cudaSuccess);
    CHECK_EQ(cudaFreeAsync(p, s1), cudaSuccess);            // pending behind the gate
    CHECK_EQ(cudaFreeAsync(p, s1), cudaErrorInvalidValue);  // double free
    CHECK_EQ(cudaMallocAsync(&q, mb, s2), cudaSuccess);
    CHECK(q != p);  // another stream cannot have it before the free executes
    CHECK_EQ(cudaMallocAsync(&r, mb, s1), cudaSuccess);
    CHECK(r == p);  // the freeing stream can, in stream order
    open = true;
    CHECK_EQ(cudaFreeAsync(r, s1), cudaSuccess);
    CHECK_EQ(cudaStreamSynchronize(s1), cudaSuccess);
    void* t = nullptr;
    CHECK_EQ(cudaMallocAsync(&t, mb, s2), cudaSuccess);
    CHECK(t == p);  // executed frees are everyone's
    CHECK_EQ(cudaFreeAsync(t, s2), cudaSuccess);
    CHECK_EQ(cudaFreeAsync(q, s2), cudaSuccess);
    CHECK_EQ(cudaStreamSynchronize(s2), cudaSuccess);
    CHECK_EQ(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &v), cudaSuccess);
    CHECK_EQ(v, 0u);
    CHECK_EQ(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &v), cudaSuccess);
    CHECK_EQ(v, 2 * mb);
    CHECK_EQ(sim::device_stats(1).reserved, 2 * mb);

    // Queued frees are not waited for: the cap is hit while a 40 MiB free is still pending.
    void *big = nullptr, *big2 = nullptr;
    std::atomic<bool> open2{false};
    CHECK_EQ(cudaMemPoolTrimTo(pool, 0), cudaSuccess);
    CHECK_EQ(cudaMallocAsync(&big, 40 * mb, s1), cudaSuccess);
    gate(s1, &open2);
    CHECK_EQ(cudaFreeAsync(big, s1), cudaSuccess);
    CHECK_EQ(cudaMallocAsync(&big2, 40 * mb, s2), cudaErrorMemoryAllocation);
    CHECK_EQ(cudaGetLastError(), cudaErrorMemoryAllocation);
    CHECK_EQ(cudaMemPoolTrimTo(pool, 0), cudaSuccess);  // nothing trimmable: the free has not run
    CHECK_EQ(cudaMallocAsync(&big2, 40 * mb, s2), cudaErrorMemoryAllocation);
    open2 = true;
    CHECK_EQ(cudaStreamSynchronize(s1), cudaSuccess);
    // Executed and cached: reusable, and counted as reserved until trimmed.
    CHECK_EQ(sim::device_stats(1).reserved, 40 * mb);
    CHECK_EQ(sim::device_stats(1).used, 0u);
    void* small = nullptr;
    CHECK_EQ(cudaMalloc(&small, 30 * mb), cudaErrorMemoryAllocation);  // cached pool memory is held
    CHECK_EQ(cudaMemPoolTrimTo(pool, 0), cudaSuccess);
    CHECK_EQ(sim::device_stats(1).reserved, 0u);
    CHECK_EQ(cudaMalloc(&small, 30 * mb), cudaSuccess);
    CHECK_EQ(cudaFree(small), cudaSuccess);
    // Release threshold 0 (CUDA's default): cached memory goes back at the next sync.
    keep = 0;
    CHECK_EQ(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep), cudaSuccess);
    CHECK_EQ(cudaMallocAsync(&big, 8 * mb, s2), cudaSuccess);
    CHECK_EQ(cudaFreeAsync(big, s2), cudaSuccess);
    CHECK_EQ(cudaStreamSynchronize(s2), cudaSuccess);
    CHECK_EQ(sim::device_stats(1).reserved, 0u);
    CHECK_EQ(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemHigh, &v), cudaSuccess);
    CHECK(v >= 40 * mb);
    CHECK_EQ(cudaMemPoolGetAttribute(nullptr, cudaMemPoolAttrReservedMemHigh, &v), cudaErrorInvalidValue);
    cudaStreamDestroy(s1);
    cudaStreamDestroy(s2);
  }).join();
}

void test_pageable_vs_pinned() {
  cudaStream_t s;
  cudaStreamCreate(&s);
  void* d = nullptr;
  CHECK_EQ(cudaMalloc(&d, 4096), cudaSuccess);
  CHECK_EQ(cudaMemset(d, 7, 4096), cudaSuccess);
  CHECK_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<unsigned char> pageable(4096, 0);
  unsigned char* pinned = nullptr;
  CHECK_EQ(cudaMallocHost(&pinned, 4096), cudaSuccess);
  std::memset(pinned, 0, 4096);
  kernel(s, [] { sleep_ms(80); });
  auto t = Clock::now();
  CHECK_EQ(cudaMemcpyAsync(pageable.data(), d, 4096, cudaMemcpyDeviceToHost, s), cudaSuccess);
  CHECK(ms_since(t) >= 60);  // blocked until the copy ran
  CHECK_EQ(pageable[4095], 7);
  kernel(s, [] { sleep_ms(80); });
  t = Clock::now();
  CHECK_EQ(cudaMemcpyAsync(pinned, d, 4096, cudaMemcpyDeviceToHost, s), cudaSuccess);
  CHECK(ms_since(t) < 40);  // pinned: asynchronous
  CHECK_EQ(pinned[4095], 0);
  CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
  CHECK_EQ(pinned[4095], 7);
  // H2D from pageable memory takes the bytes at the call.
  std::vector<unsigned char> src(4096, 3);
  kernel(s, [] { sleep_ms(30); });
  CHECK_EQ(cudaMemcpyAsync(d, src.data(), 4096, cudaMemcpyHostToDevice, s), cudaSuccess);
  std::fill(src.begin(), src.end(), 9);
  CHECK_EQ(cudaMemcpy(pageable.data(), d, 4096, cudaMemcpyDefault), cudaSuccess);
  CHECK_EQ(pageable[0], 3);
  // Kind and range checks.
  CHECK_EQ(cudaMemcpyAsync(d, src.data(), 8192, cudaMemcpyHostToDevice, s), cudaErrorInvalidValue);
  CHECK_EQ(cudaMemcpyAsync(src.data(), pageable.data(), 16, cudaMemcpyHostToDevice, s), cudaErrorInvalidValue);
  CHECK_EQ(cudaMemcpyAsync(d, src.data(), 16, cudaMemcpyDeviceToHost, s), cudaErrorInvalidValue);
  CHECK_EQ(cudaMemsetAsync(src.data(), 0, 16, s), cudaErrorInvalidValue);
  CHECK_EQ(cudaMemcpyAsync(d, d, 16, static_cast<cudaMemcpyKind>(17), s), cudaErrorInvalidMemcpyDirection);
  CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
  cudaFree(d);
  cudaFreeHost(pinned);
  cudaStreamDestroy(s);
  cudaGetLastError();
}

void test_peer_access() {
  // Pool memory on cuda:1 and cuda:0.
  void *p0 = nullptr, *p1 = nullptr;
  cudaStream_t s0, s1;
  cudaSetDevice(1);
  cudaStreamCreate(&s1);
  CHECK_EQ(cudaMallocAsync(&p1, 256, s1), cudaSuccess);
  CHECK_EQ(cudaMemsetAsync(p1, 5, 256, s1), cudaSuccess);
  CHECK_EQ(cudaStreamSynchronize(s1), cudaSuccess);
  cudaSetDevice(0);
  cudaStreamCreate(&s0);
  CHECK_EQ(cudaMallocAsync(&p0, 256, s0), cudaSuccess);
  // Peer copies name both ends' devices; a wrong one is rejected.
  CHECK_EQ(cudaMemcpyPeerAsync(p0, 1, p1, 1, 256, s0), cudaErrorInvalidValue);
  CHECK_EQ(cudaMemcpyPeerAsync(p0, 0, p1, 0, 256, s0), cudaErrorInvalidValue);
  CHECK_EQ(cudaMemcpyPeerAsync(p0, 0, p1, 9, 256, s0), cudaErrorInvalidDevice);
  CHECK_EQ(cudaMemcpyPeerAsync(p0, 0, p1, 1, 256, s0), cudaSuccess);
  unsigned char h[256];
  CHECK_EQ(cudaMemcpyAsync(h, p0, 256, cudaMemcpyDeviceToHost, s0), cudaSuccess);
  CHECK_EQ(h[255], 5);
  cudaGetLastError();
  int can = -1;
  CHECK_EQ(cudaDeviceCanAccessPeer(&can, 0, 1), cudaSuccess);
  CHECK_EQ(can, peer_on() ? 1 : 0);
  CHECK_EQ(cudaDeviceCanAccessPeer(&can, 0, 0), cudaSuccess);
  CHECK_EQ(can, 0);
  CHECK_EQ(cudaDeviceCanAccessPeer(&can, 0, 7), cudaErrorInvalidDevice);
  cudaMemPool_t pool1;
  CHECK_EQ(cudaDeviceGetDefaultMemPool(&pool1, 1), cudaSuccess);
  cudaMemAccessDesc desc{};
  desc.location.type = cudaMemLocationTypeDevice;
  desc.location.id = 0;
  desc.flags = cudaMemAccessFlagsProtReadWrite;
  if (!peer_on()) {
    CHECK_EQ(cudaMemPoolSetAccess(pool1, &desc, 1), cudaErrorInvalidDevice);
    CHECK_EQ(cudaDeviceEnablePeerAccess(1, 0), cudaErrorPeerAccessUnsupported);
  } else {
    // cuda:2 has no access to cuda:1's pool: its kernel faults, stickily, in stream order.
    std::thread([&] {
      cudaSetDevice(2);
      cudaStream_t s2;
      cudaStreamCreate(&s2);
      kernel(
          s2, [] {}, {nullptr, p1}, "reads_peer_kernel");
      CHECK_EQ(cudaStreamSynchronize(s2), cudaErrorIllegalAddress);
      const std::string msg = cudaGetErrorString(cudaErrorIllegalAddress);
      CHECK(msg.find("reads_peer_kernel") != std::string::npos);
      CHECK(msg.find("cuda:1") != std::string::npos && msg.find("cuda:2") != std::string::npos);
      void* q = nullptr;
      CHECK_EQ(cudaMalloc(&q, 16), cudaErrorIllegalAddress);
      CHECK_EQ(cudaGetLastError(), cudaErrorIllegalAddress);
      CHECK_EQ(cudaGetLastError(), cudaErrorIllegalAddress);  // sticky
    }).join();
    // With the pool's access granted, cuda:0's kernel may use cuda:1 pool memory.
    CHECK_EQ(cudaMemPoolSetAccess(pool1, &desc, 1), cudaSuccess);
    kernel(s0, [] {}, {p1, p0});
    CHECK_EQ(cudaStreamSynchronize(s0), cudaSuccess);
    // cudaMalloc memory needs cudaDeviceEnablePeerAccess instead.
    void* m1 = nullptr;
    cudaSetDevice(1);
    CHECK_EQ(cudaMalloc(&m1, 64), cudaSuccess);
    cudaSetDevice(0);
    CHECK_EQ(cudaDeviceEnablePeerAccess(1, 0), cudaSuccess);
    CHECK_EQ(cudaDeviceEnablePeerAccess(1, 0), cudaErrorPeerAccessAlreadyEnabled);
    kernel(s0, [] {}, {m1});
    CHECK_EQ(cudaStreamSynchronize(s0), cudaSuccess);
    CHECK_EQ(cudaDeviceDisablePeerAccess(1), cudaSuccess);
    cudaFree(m1);
    desc.flags = cudaMemAccessFlagsProtNone;
    CHECK_EQ(cudaMemPoolSetAccess(pool1, &desc, 1), cudaSuccess);
  }
  desc.location.id = 1;  // the owner cannot lose access to its own pool
  desc.flags = cudaMemAccessFlagsProtNone;
  CHECK_EQ(cudaMemPoolSetAccess(pool1, &desc, 1), cudaErrorInvalidValue);
  // A kernel goes to a stream of the current device only.
  kernel(s1, [] {});
  CHECK_EQ(cudaGetLastError(), cudaErrorInvalidResourceHandle);
  CHECK_EQ(cudaStreamSynchronize(s0), cudaSuccess);
  cudaFreeAsync(p0, s0);
  cudaFreeAsync(p1, s1);
  cudaStreamDestroy(s0);
  cudaStreamDestroy(s1);
  cudaGetLastError();
}

// ---- errors ----
void test_last_error_per_thread() {
  CHECK_EQ(cudaSetDevice(99), cudaErrorInvalidDevice);
  std::thread([] { CHECK_EQ(cudaGetLastError(), cudaSuccess); }).join();
  CHECK_EQ(cudaPeekAtLastError(), cudaErrorInvalidDevice);
  CHECK_EQ(cudaPeekAtLastError(), cudaErrorInvalidDevice);
  CHECK_EQ(cudaGetLastError(), cudaErrorInvalidDevice);
  CHECK_EQ(cudaGetLastError(), cudaSuccess);
  CHECK(std::string(cudaGetErrorName(cudaErrorNotReady)) == "cudaErrorNotReady");
  CHECK(std::string(cudaGetErrorString(cudaErrorMemoryAllocation)) == "out of memory");
  CHECK(std::string(cudaGetErrorString(static_cast<cudaError_t>(12345))) == "unrecognized error code");
  // Launch geometry errors are reported by cudaGetLastError, as check_launch expects.
  sim::launch(sim::LaunchCfg{dim3(1), dim3(2048), 0, nullptr, "too_big"}, [] {}, {});
  CHECK_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
  // Bad handles and arguments never crash.
  int dummy = 0;
  cudaStream_t bogus = reinterpret_cast<cudaStream_t>(&dummy);
  CHECK_EQ(cudaStreamSynchronize(bogus), cudaErrorInvalidResourceHandle);
  CHECK_EQ(cudaStreamDestroy(nullptr), cudaErrorInvalidResourceHandle);
  CHECK_EQ(cudaStreamCreateWithFlags(nullptr, 0), cudaErrorInvalidValue);
  CHECK_EQ(cudaStreamCreateWithFlags(&bogus, 0x80), cudaErrorInvalidValue);
  CHECK_EQ(cudaEventCreateWithFlags(nullptr, 0), cudaErrorInvalidValue);
  CHECK_EQ(cudaGetDeviceProperties(nullptr, 0), cudaErrorInvalidValue);
  cudaDeviceProp p;
  CHECK_EQ(cudaGetDeviceProperties(&p, -1), cudaErrorInvalidDevice);
  CHECK_EQ(cudaMemcpyAsync(nullptr, nullptr, 16, cudaMemcpyDefault, nullptr), cudaErrorInvalidValue);
  CHECK_EQ(cudaDeviceGetDefaultMemPool(nullptr, 0), cudaErrorInvalidValue);
  cudaMemPool_t pool;
  CHECK_EQ(cudaDeviceGetDefaultMemPool(&pool, 64), cudaErrorInvalidDevice);
  CHECK_EQ(cudaHostAlloc(reinterpret_cast<void**>(&pool), 16, 0x100), cudaErrorInvalidValue);
  CHECK_EQ(cudaFreeHost(&dummy), cudaErrorInvalidValue);
  cudaGetLastError();
}

void test_sticky_kernel_fault() {
  std::thread([] {
    cudaSetDevice(3);
    cudaStream_t s;
    CHECK_EQ(cudaStreamCreate(&s), cudaSuccess);
    std::atomic<bool> after{false};
    kernel(s, [] { throw sim::KernelFault("bad_barrier_kernel: thread 5 never reached __syncthreads"); });
    sim::enqueue_host_op(s, [&] { after = true; });
    CHECK_EQ(cudaStreamSynchronize(s), cudaErrorLaunchFailure);
    CHECK(!after.load());  // a dead context runs nothing more
    CHECK(std::string(cudaGetErrorString(cudaErrorLaunchFailure)).find("bad_barrier_kernel") != std::string::npos);
    CHECK_EQ(cudaGetLastError(), cudaErrorLaunchFailure);
    CHECK_EQ(cudaGetLastError(), cudaErrorLaunchFailure);
    void* q = nullptr;
    CHECK_EQ(cudaMalloc(&q, 16), cudaErrorLaunchFailure);
    kernel(s, [] {});
    CHECK_EQ(cudaGetLastError(), cudaErrorLaunchFailure);
    cudaEvent_t e;
    CHECK_EQ(cudaEventCreate(&e), cudaErrorLaunchFailure);
  }).join();
  // Other devices are unaffected.
  void* q = nullptr;
  CHECK_EQ(cudaMalloc(&q, 16), cudaSuccess);
  CHECK_EQ(cudaFree(q), cudaSuccess);
  CHECK_EQ(cudaGetLastError(), cudaSuccess);
}

void test_fault_injection() {
  cudaStream_t s;
  cudaStreamCreate(&s);
  sim::set_faults("cudaMallocAsync:2,cudaEventRecord:1,launch:1,cuStreamWriteValue32:1");
  void *a = nullptr, *b = nullptr, *c = nullptr;
  CHECK_EQ(cudaMallocAsync(&a, 64, s), cudaSuccess);
  CHECK_EQ(cudaMallocAsync(&b, 64, s), cudaErrorMemoryAllocation);
  CHECK_EQ(cudaGetLastError(), cudaErrorMemoryAllocation);
  CHECK_EQ(cudaMallocAsync(&c, 64, s), cudaSuccess);
  cudaEvent_t e;
  cudaEventCreate(&e);
  CHECK_EQ(cudaEventRecord(e, s), cudaErrorUnknown);
  CHECK_EQ(cudaEventRecord(e, s), cudaSuccess);
  bool ran = false;
  kernel(s, [&] { ran = true; });
  CHECK_EQ(cudaGetLastError(), cudaErrorLaunchFailure);
  kernel(s, [&] { ran = true; });
  CHECK_EQ(cudaGetLastError(), cudaSuccess);
  CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);  // not sticky
  CHECK(ran);
  void* v = nullptr;
  cudaGetDriverEntryPointByVersion("cuStreamWriteValue32", &v, 12000, cudaEnableDefault, nullptr);
  uint32_t* word = nullptr;
  cudaMallocHost(&word, 4);
  auto write = reinterpret_cast<CUresult (*)(CUstream, CUdeviceptr, cuuint32_t, unsigned)>(v);
  CHECK_EQ(write(s, reinterpret_cast<CUdeviceptr>(word), 1, 0), CUDA_ERROR_UNKNOWN);
  sim::set_faults("");
  CHECK_EQ(write(s, reinterpret_cast<CUdeviceptr>(word), 1, 0), CUDA_SUCCESS);
  bool threw = false;
  try {
    sim::set_faults("cudaMalloc:zero");
  } catch (const std::invalid_argument&) {
    threw = true;
  }
  CHECK(threw);
  CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
  cudaFreeAsync(a, s);
  cudaFreeAsync(c, s);
  cudaEventDestroy(e);
  cudaStreamDestroy(s);
  cudaFreeHost(word);
}

// `name:N:hold` parks that call until the plan is replaced, then lets it do its work.
void test_held_call() {
  sim::set_faults("cudaEventCreate:2:hold");
  cudaEvent_t first, second;
  CHECK_EQ(cudaEventCreate(&first), cudaSuccess);
  std::atomic<bool> returned{false};
  std::thread t([&] {
    CHECK_EQ(cudaEventCreate(&second), cudaSuccess);
    returned = true;
  });
  for (int i = 0; i < 1000 && sim::held_calls().empty(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  CHECK(sim::held_calls() == std::vector<std::string>{"cudaEventCreate"});
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK(!returned.load());
  sim::set_faults("");
  t.join();
  CHECK(returned.load());
  CHECK(sim::held_calls().empty());
  cudaEventDestroy(first);
  cudaEventDestroy(second);
}

}  // namespace

int main() {
  setenv("FLOCKML_CUDA_SIM_DEVICES", "4", 1);
  setenv("FLOCKML_CUDA_SIM_MEMORY", "64M", 1);
  setenv("FLOCKML_CUDA_SIM_POISON", "1", 1);
  std::printf("cuda sim runtime tests (peer access %s)\n", peer_on() ? "on" : "off");
  run("context accounting", test_context_accounting);
  run("stream order and destroy", test_stream_order);
  run("events and cross-stream waits", test_events);
  run("legacy default stream", test_legacy_stream);
  run("host functions", test_host_func);
  run("stream wait/write value", test_stream_values);
  run("memory cap and OOM", test_memory_cap);
  run("stream-ordered pool", test_stream_ordered_pool);
  run("pageable vs pinned copies", test_pageable_vs_pinned);
  run("peer access", test_peer_access);
  run("per-thread last error, bad arguments", test_last_error_per_thread);
  run("sticky kernel fault", test_sticky_kernel_fault);
  run("fault injection", test_fault_injection);
  run("a call held by the fault plan", test_held_call);
  std::printf("%d passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}
