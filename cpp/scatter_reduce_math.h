// The reductions of scatterReduce, shared by the CPU and CUDA kernels so both compute the same
// thing: how two values combine, and the value a target starts from without include_self.
#pragma once
#include <cmath>
#include <limits>
#include <type_traits>
#include "kernels.h"

#ifdef __CUDACC__
#define FLOCK_SCATTER_HD __host__ __device__ __forceinline__
#else
#define FLOCK_SCATTER_HD inline
#endif

namespace flock::scatter_math {

template <class C>
FLOCK_SCATTER_HD C combine(ScatterReduceOp op, C a, C b) {
  switch (op) {
    case ScatterReduceOp::prod:
      return a * b;
    case ScatterReduceOp::amax:
    case ScatterReduceOp::amin:
      if constexpr (std::is_floating_point_v<C>) {
        if (a != a || b != b) return a != a ? a : b;  // NaN propagates, as torch
      }
      return op == ScatterReduceOp::amax ? (b > a ? b : a) : (b < a ? b : a);
    default:
      return a + b;
  }
}

template <class C>
FLOCK_SCATTER_HD C identity(ScatterReduceOp op) {
  switch (op) {
    case ScatterReduceOp::prod:
      return C(1);
    case ScatterReduceOp::amax:
      if constexpr (std::is_floating_point_v<C>)
        return -INFINITY;
      else
        return std::numeric_limits<C>::lowest();
    case ScatterReduceOp::amin:
      if constexpr (std::is_floating_point_v<C>)
        return INFINITY;
      else
        return std::numeric_limits<C>::max();
    default:
      return C(0);
  }
}

}  // namespace flock::scatter_math
