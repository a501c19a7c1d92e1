// Loop drivers for CPU kernels: broadcasting element-wise iteration with dimension coalescing,
// split over the intra-op pool by rows of the coalesced output.
#pragma once
#include <array>
#include <cstdint>
#include "../tensor.h"
#include "isa.h"
#include "threadpool.h"

namespace flock::cpu {

// Strides (in elements) of a contiguous tensor of shape `in` broadcast to `out`: 0 where broadcast.
inline std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out) {
  std::vector<int64_t> st(out.size(), 0);
  int64_t s = 1;
  for (int64_t i = static_cast<int64_t>(in.size()) - 1, j = static_cast<int64_t>(out.size()) - 1; i >= 0; --i, --j) {
    st[j] = in[i] == 1 ? 0 : s;
    s *= in[i];
  }
  return st;
}

// Calls body(out_offset, n, in_offsets, in_steps) for each run of `n` contiguous output
// elements; input k advances in_steps[k] (0 or more) elements per output element.
template <size_t N, class Body>
void broadcast_for(const Shape& out, const std::array<const Shape*, N>& ins, int64_t grain_elems, Body body) {
  int64_t total = 1;
  for (int64_t s : out) total *= s;
  if (total == 0) return;
  // Coalesced dims, innermost last. Each entry: size, and a stride per input.
  std::vector<int64_t> sizes;
  std::vector<std::array<int64_t, N>> strides;
  std::array<std::vector<int64_t>, N> full;
  for (size_t k = 0; k < N; ++k) full[k] = broadcast_strides(*ins[k], out);
  for (size_t d = 0; d < out.size(); ++d) {
    if (out[d] == 1) continue;
    std::array<int64_t, N> st;
    for (size_t k = 0; k < N; ++k) st[k] = full[k][d];
    if (!sizes.empty()) {
      bool merge = true;
      for (size_t k = 0; k < N; ++k)
        if (strides.back()[k] != st[k] * out[d]) merge = false;
      if (merge) {
        sizes.back() *= out[d];
        strides.back() = st;
        continue;
      }
    }
    sizes.push_back(out[d]);
    strides.push_back(st);
  }
  if (sizes.empty()) {
    sizes.push_back(1);
    strides.push_back({});
  }
  const int64_t inner = sizes.back();
  const std::array<int64_t, N> steps = strides.back();
  const int64_t rows = total / inner;
  const int64_t grain = std::max<int64_t>(1, grain_elems / inner);
  const int64_t nd = static_cast<int64_t>(sizes.size());
  parallel_for(rows, grain, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      std::array<int64_t, N> off{};
      int64_t rem = r;
      for (int64_t d = nd - 2; d >= 0; --d) {
        int64_t i = rem % sizes[d];
        rem /= sizes[d];
        for (size_t k = 0; k < N; ++k) off[k] += i * strides[d][k];
      }
      body(r * inner, inner, off, steps);
    }
  });
}

constexpr int64_t kElementGrain = 32768;

// Function attributes that compile one function (or lambda) for a wider instruction set than the
// addon's baseline; only call such code when cpu_isa() says the CPU has it.
#define FLOCK_TARGET_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl")))
#define FLOCK_TARGET_AVX2 __attribute__((target("avx2,fma")))

// parallel_for(n, grain, [&](int64_t s, int64_t e) { body }) with the body compiled three times
// (AVX-512, AVX2+FMA, baseline) and the one for cpu_isa() run, so the compiler vectorises it at
// the chosen width. Inline callees in the body are compiled into each copy. Use it for the hot
// f32 loops only: each use triples the code of its body.
#define FLOCK_ISA_PARALLEL_FOR(n, grain, s, e, ...)                                                          \
  do {                                                                                                       \
    switch (::flock::cpu::cpu_isa()) {                                                                       \
      case ::flock::cpu::Isa::avx512:                                                                        \
        ::flock::cpu::parallel_for(n, grain, [&](int64_t s, int64_t e) FLOCK_TARGET_AVX512 { __VA_ARGS__ }); \
        break;                                                                                               \
      case ::flock::cpu::Isa::avx2:                                                                          \
        ::flock::cpu::parallel_for(n, grain, [&](int64_t s, int64_t e) FLOCK_TARGET_AVX2 { __VA_ARGS__ });   \
        break;                                                                                               \
      case ::flock::cpu::Isa::generic:                                                                       \
        ::flock::cpu::parallel_for(n, grain, [&](int64_t s, int64_t e) { __VA_ARGS__ });                     \
        break;                                                                                               \
    }                                                                                                        \
  } while (0)

}  // namespace flock::cpu
