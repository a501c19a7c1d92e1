// Force-included (g++ -include sim/cuda_sim.h) into every cuda/*.cu of a FLOCKML_CUDA=SIM build:
// the CUDA C++ device spellings as plain C++ over the kernel engine (sim/engine*.cc). Kernels
// compile unchanged; each simulated thread runs the kernel body once on a fiber of its block.
// Not defined here on purpose: __CUDACC__ and __CUDA_ARCH__ (shared headers keep their host
// paths), extern __shared__ (no dynamic shared memory), __constant__/__device__ globals (one
// object per process here but one per device on a GPU).
#pragma once
// <math.h>, not just <cmath>: device code calls isinf, isfinite, fmax(float, float) & co. unqualified,
// and libstdc++'s <math.h> brings those overloads into the global namespace as CUDA's headers do.
#include <math.h>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>
#include "kernel_abi.h"

// --- qualifiers ---
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __grid_constant__
#define __align__(n) __attribute__((aligned(n)))
#define __restrict__ __restrict
// A worker OS thread runs one block at a time and a block never leaves its worker, so a
// thread-local static is exactly one copy per resident block.
#define __shared__ static thread_local

// --- built-in variables (read-only, like CUDA's) ---
#define threadIdx (static_cast<const uint3&>(::sim::detail::regs.thread_idx))
#define blockIdx (static_cast<const uint3&>(::sim::detail::regs.block_idx))
#define blockDim (static_cast<const uint3&>(::sim::detail::regs.block_dim))
#define gridDim (static_cast<const uint3&>(::sim::detail::regs.grid_dim))
constexpr int warpSize = 32;

// --- barriers and fences ---
inline void __syncthreads() { ::sim::detail::block_barrier(); }
inline void __syncwarp(unsigned mask = 0xffffffffu) {
  ::sim::detail::WarpSlot s{};
  ::sim::detail::warp_exchange(mask, ::sim::detail::WarpOp::Sync, s);
}
// Blocks run on several OS threads; a device-wide fence is a full C++ fence.
inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_block() { __atomic_signal_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_system() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

// --- warp shuffles and votes ---
namespace sim::detail {
// `source(lane)` is the lane to read, or -1 for "own value" (CUDA's rule for out-of-range
// sources); a source lane outside the mask or the block also yields the caller's own value.
template <class T, class Source>
inline T shuffle(unsigned mask, T v, Source source) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= 8, "shuffles move values of up to 8 bytes");
  WarpSlot s{};
  std::memcpy(&s.word, &v, sizeof(T));
  const WarpView w = warp_exchange(mask, WarpOp::Shuffle, s);
  const int src = source(static_cast<int>(w.lane));
  if (src < 0 || src > 31 || !((w.valid >> src) & 1u)) return v;
  T r;
  std::memcpy(&r, &w.slots[src].word, sizeof(T));
  return r;
}
inline unsigned ballot(unsigned mask, bool pred) {
  WarpSlot s{};
  s.word = pred ? 1 : 0;
  const WarpView w = warp_exchange(mask, WarpOp::Vote, s);
  unsigned r = 0;
  for (unsigned l = 0; l < 32; ++l)
    if (((w.valid >> l) & 1u) && w.slots[l].word) r |= 1u << l;
  return r;
}
}  // namespace sim::detail

// width: a power of two <= 32; lanes form groups of `width` and read within their group.
template <class T>
inline T __shfl_sync(unsigned mask, T var, int src_lane, int width = warpSize) {
  return ::sim::detail::shuffle(mask, var, [&](int lane) { return (lane & ~(width - 1)) + (src_lane & (width - 1)); });
}
template <class T>
inline T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = warpSize) {
  return ::sim::detail::shuffle(
      mask, var, [&](int lane) { return (lane & (width - 1)) < static_cast<int>(delta) ? -1 : lane - static_cast<int>(delta); });
}
template <class T>
inline T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = warpSize) {
  return ::sim::detail::shuffle(mask, var, [&](int lane) {
    return (lane & (width - 1)) + static_cast<int>(delta) >= width ? -1 : lane + static_cast<int>(delta);
  });
}
template <class T>
inline T __shfl_xor_sync(unsigned mask, T var, int lane_mask, int width = warpSize) {
  // Earlier groups may be read, later ones give the caller's own value (CUDA's documented rule).
  return ::sim::detail::shuffle(mask, var, [&](int lane) {
    const int src = lane ^ lane_mask;
    return src >= (lane & ~(width - 1)) + width ? -1 : src;
  });
}
inline unsigned __ballot_sync(unsigned mask, int pred) { return ::sim::detail::ballot(mask, pred != 0); }
inline int __any_sync(unsigned mask, int pred) { return ::sim::detail::ballot(mask, pred != 0) != 0; }
inline int __all_sync(unsigned mask, int pred) {
  // Lanes of the mask the block lacks do not vote: compare with the lanes that did.
  ::sim::detail::WarpSlot s{};
  s.word = pred != 0;
  const ::sim::detail::WarpView w = ::sim::detail::warp_exchange(mask, ::sim::detail::WarpOp::Vote, s);
  for (unsigned l = 0; l < 32; ++l)
    if (((w.valid >> l) & 1u) && !w.slots[l].word) return 0;
  return 1;
}

// --- atomics: GCC builtins on host memory (blocks of a grid run on several OS threads) ---
#define SIM_ATOMIC_RMW(name, builtin, T) \
  inline T name(T* p, T v) { return builtin(p, v, __ATOMIC_SEQ_CST); }
SIM_ATOMIC_RMW(atomicAdd, __atomic_fetch_add, int)
SIM_ATOMIC_RMW(atomicAdd, __atomic_fetch_add, unsigned)
SIM_ATOMIC_RMW(atomicAdd, __atomic_fetch_add, unsigned long long)
SIM_ATOMIC_RMW(atomicSub, __atomic_fetch_sub, int)
SIM_ATOMIC_RMW(atomicSub, __atomic_fetch_sub, unsigned)
SIM_ATOMIC_RMW(atomicExch, __atomic_exchange_n, int)
SIM_ATOMIC_RMW(atomicExch, __atomic_exchange_n, unsigned)
SIM_ATOMIC_RMW(atomicExch, __atomic_exchange_n, unsigned long long)
SIM_ATOMIC_RMW(atomicAnd, __atomic_fetch_and, int)
SIM_ATOMIC_RMW(atomicAnd, __atomic_fetch_and, unsigned)
SIM_ATOMIC_RMW(atomicAnd, __atomic_fetch_and, unsigned long long)
SIM_ATOMIC_RMW(atomicOr, __atomic_fetch_or, int)
SIM_ATOMIC_RMW(atomicOr, __atomic_fetch_or, unsigned)
SIM_ATOMIC_RMW(atomicOr, __atomic_fetch_or, unsigned long long)
SIM_ATOMIC_RMW(atomicXor, __atomic_fetch_xor, int)
SIM_ATOMIC_RMW(atomicXor, __atomic_fetch_xor, unsigned)
SIM_ATOMIC_RMW(atomicXor, __atomic_fetch_xor, unsigned long long)
#undef SIM_ATOMIC_RMW

#define SIM_ATOMIC_CAS(T)                                                                   \
  inline T atomicCAS(T* p, T compare, T v) {                                                \
    __atomic_compare_exchange_n(p, &compare, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); \
    return compare;                                                                         \
  }
SIM_ATOMIC_CAS(int)
SIM_ATOMIC_CAS(unsigned)
SIM_ATOMIC_CAS(unsigned long long)
SIM_ATOMIC_CAS(unsigned short)
#undef SIM_ATOMIC_CAS

namespace sim::detail {
// *p = f(*p) through a compare-and-swap loop on the value's bits; returns the old value.
template <class T, class F>
inline T atomic_update(T* p, F f) {
  T old = __atomic_load_n(p, __ATOMIC_RELAXED);
  while (!__atomic_compare_exchange_n(p, &old, f(old), true, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
  }
  return old;
}
template <class T, class W, class F>
inline T atomic_update_bits(T* p, F f) {
  static_assert(sizeof(T) == sizeof(W));
  W* w = reinterpret_cast<W*>(p);
  const W old = atomic_update(w, [&](W bits) {
    T cur;
    std::memcpy(&cur, &bits, sizeof(T));
    const T next = f(cur);
    W out;
    std::memcpy(&out, &next, sizeof(T));
    return out;
  });
  T r;
  std::memcpy(&r, &old, sizeof(T));
  return r;
}
}  // namespace sim::detail

inline float atomicAdd(float* p, float v) {
  return ::sim::detail::atomic_update_bits<float, uint32_t>(p, [v](float x) { return x + v; });
}
inline double atomicAdd(double* p, double v) {
  return ::sim::detail::atomic_update_bits<double, uint64_t>(p, [v](double x) { return x + v; });
}
inline float atomicExch(float* p, float v) {
  return ::sim::detail::atomic_update_bits<float, uint32_t>(p, [v](float) { return v; });
}
#define SIM_ATOMIC_MINMAX(T)                                                    \
  inline T atomicMax(T* p, T v) {                                               \
    return ::sim::detail::atomic_update(p, [v](T x) { return x < v ? v : x; }); \
  }                                                                             \
  inline T atomicMin(T* p, T v) {                                               \
    return ::sim::detail::atomic_update(p, [v](T x) { return v < x ? v : x; }); \
  }
SIM_ATOMIC_MINMAX(int)
SIM_ATOMIC_MINMAX(unsigned)
SIM_ATOMIC_MINMAX(long long)
SIM_ATOMIC_MINMAX(unsigned long long)
#undef SIM_ATOMIC_MINMAX

// --- bit reinterpretation ---
namespace sim::detail {
template <class To, class From>
inline To bits_as(From v) {
  static_assert(sizeof(To) == sizeof(From));
  To r;
  std::memcpy(&r, &v, sizeof(To));
  return r;
}
}  // namespace sim::detail
inline double __longlong_as_double(long long v) { return ::sim::detail::bits_as<double>(v); }
inline long long __double_as_longlong(double v) { return ::sim::detail::bits_as<long long>(v); }
inline float __int_as_float(int v) { return ::sim::detail::bits_as<float>(v); }
inline int __float_as_int(float v) { return ::sim::detail::bits_as<int>(v); }
inline float __uint_as_float(unsigned v) { return ::sim::detail::bits_as<float>(v); }
inline unsigned __float_as_uint(float v) { return ::sim::detail::bits_as<unsigned>(v); }

// --- integer min/max as device code has them (int64_t is `long` here, so it gets its own) ---
#define SIM_MINMAX(T)                              \
  inline T min(T a, T b) { return b < a ? b : a; } \
  inline T max(T a, T b) { return a < b ? b : a; }
SIM_MINMAX(int)
SIM_MINMAX(unsigned)
SIM_MINMAX(long)
SIM_MINMAX(unsigned long)
SIM_MINMAX(long long)
SIM_MINMAX(unsigned long long)
#undef SIM_MINMAX

// --- loads, bit tricks and fast-math intrinsics (the CPU's libm stands in for the SFU) ---
template <class T>
inline T __ldg(const T* p) {
  return *p;
}
inline int __popc(unsigned v) { return __builtin_popcount(v); }
inline int __popcll(unsigned long long v) { return __builtin_popcountll(v); }
inline int __clz(int v) { return v ? __builtin_clz(static_cast<unsigned>(v)) : 32; }
inline int __clzll(long long v) { return v ? __builtin_clzll(static_cast<unsigned long long>(v)) : 64; }
inline int __ffs(int v) { return __builtin_ffs(v); }
inline int __ffsll(long long v) { return __builtin_ffsll(v); }
inline unsigned __brev(unsigned v) {
  unsigned r = 0;
  for (int i = 0; i < 32; ++i, v >>= 1) r = (r << 1) | (v & 1u);
  return r;
}
inline float __expf(float x) { return std::exp(x); }
inline float __logf(float x) { return std::log(x); }
inline float __powf(float x, float y) { return std::pow(x, y); }
inline float __sinf(float x) { return std::sin(x); }
inline float __cosf(float x) { return std::cos(x); }
inline float __tanf(float x) { return std::tan(x); }
inline float __fdividef(float x, float y) { return x / y; }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __fsqrt_rn(float x) { return std::sqrt(x); }
inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
inline double __fma_rn(double a, double b, double c) { return std::fma(a, b, c); }
inline float __saturatef(float x) { return x != x ? 0.0f : x < 0.0f ? 0.0f : x > 1.0f ? 1.0f : x; }
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }

// --- kernel launches ---
// FLOCK_LAUNCH(grid, block, shared, stream, kernel)(args...): binds the kernel's function pointer,
// converts the arguments to its parameter types at the call (as a real launch does, literal 0 for
// a pointer included), copies them into the closure every simulated thread calls the kernel
// from, and hands the runtime the pointer arguments for its device-ownership check.
namespace sim::detail {
template <class... P>
struct BoundKernel {
  LaunchCfg cfg;
  void (*kernel)(P...);
  void operator()(P... args) const {
    std::tuple<std::decay_t<P>...> params(args...);
    std::vector<const void*> pointers;
    std::apply(
        [&](const auto&... v) {
          auto collect = [&](const auto& x) {
            using X = std::decay_t<decltype(x)>;
            if constexpr (std::is_pointer_v<X> && !std::is_function_v<std::remove_pointer_t<X>>)
              pointers.push_back(static_cast<const void*>(x));
          };
          (collect(v), ...);
        },
        params);
    auto k = kernel;
    ::sim::launch(
        cfg, [k, params] { std::apply(k, params); }, std::move(pointers));
  }
};
struct LaunchSite {
  LaunchCfg cfg;
};
template <class... P>
BoundKernel<P...> operator+(const LaunchSite& site, void (*kernel)(P...)) {
  return BoundKernel<P...>{site.cfg, kernel};
}
}  // namespace sim::detail

#ifndef FLOCK_LAUNCH
#define FLOCK_LAUNCH(grid, block, shared, stream, ...)                                                                       \
  (::sim::detail::LaunchSite{::sim::LaunchCfg{dim3(grid), dim3(block), static_cast<size_t>(shared), stream, #__VA_ARGS__}} + \
   __VA_ARGS__)
#endif
