// Element-wise reduction of a received chunk into the local one, for every dtype the collectives
// take. bf16/f16 widen to float for the operation and round back once, as NCCL does.
#pragma once
#include <cstddef>
#include "../dtype.h"
#include "process_group.h"

namespace flock::dist {

template <class T>
void reduce_typed(T* dst, const T* src, size_t n, ReduceOp op) {
  using A = acc_t<T>;
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Avg:
      for (size_t i = 0; i < n; ++i) dst[i] = T(static_cast<A>(dst[i]) + static_cast<A>(src[i]));
      break;
    case ReduceOp::Prod:
      for (size_t i = 0; i < n; ++i) dst[i] = T(static_cast<A>(dst[i]) * static_cast<A>(src[i]));
      break;
    case ReduceOp::Max:
      for (size_t i = 0; i < n; ++i) {
        A a = dst[i], b = src[i];
        dst[i] = T(b > a || b != b ? b : a);
      }
      break;
    case ReduceOp::Min:
      for (size_t i = 0; i < n; ++i) {
        A a = dst[i], b = src[i];
        dst[i] = T(b < a || b != b ? b : a);
      }
      break;
  }
}

inline void reduce_into(void* dst, const void* src, size_t n, DType t, ReduceOp op) {
  visit_numeric(t, "allreduce", [&](auto tag) {
    using T = typename decltype(tag)::type;
    reduce_typed(static_cast<T*>(dst), static_cast<const T*>(src), n, op);
  });
}

// dst = dst op srcs[0] op srcs[1] ... (in that order), a block at a time so that the block of dst
// stays in L1 while every source passes over it: one pass over dst instead of one per source.
inline void reduce_many(void* dst, const void* const* srcs, int count, size_t n, DType t, ReduceOp op) {
  visit_numeric(t, "allreduce", [&](auto tag) {
    using T = typename decltype(tag)::type;
    constexpr size_t kBlock = 16384 / sizeof(T);
    T* d = static_cast<T*>(dst);
    for (size_t b = 0; b < n; b += kBlock) {
      const size_t m = n - b < kBlock ? n - b : kBlock;
      for (int s = 0; s < count; ++s) reduce_typed(d + b, static_cast<const T*>(srcs[s]) + b, m, op);
    }
  });
}

// Divides by the group size after a sum, for ReduceOp::Avg (floating dtypes only).
inline void scale_into(void* p, size_t n, DType t, double factor) {
  visit_float(t, "allreduce(avg)", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* d = static_cast<T*>(p);
    for (size_t i = 0; i < n; ++i) d[i] = from_double<T>(to_double(d[i]) * factor);
  });
}

}  // namespace flock::dist
