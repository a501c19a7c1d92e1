// CUDA scatter and scatterReduce (sum, prod, mean, amax, amin; include_self as torch). Updates
// that may meet at one element go through a compare-and-swap on the enclosing word, for every
// dtype; bad index values are reported through the stream's IndexFault (ERR_INDEX at the next sync).
#include <cmath>
#include <limits>
#include "common.cuh"
#include "index_plan.cuh"
#include "kernels.h"
#include "scatter_reduce_math.h"

namespace flock::cuda {
namespace {

// The output offset of index element e, or -1 (reported once) when its value is out of range.
__device__ __forceinline__ int64_t target(const IndexPlan& g, const void* index, bool wide, int64_t e, IndexFault* fault,
                                          int op) {
  const int64_t k = read_index(index, wide, e);
  if (k < 0 || k >= g.data_dim) {
    if (fault) report_fault(fault, op, k, g.data_dim);
    return -1;
  }
  return index_offset(g, e, k);
}

template <class W>
__global__ void scatter_kernel(W* out, const void* index, bool wide, const W* src, int64_t n, IndexPlan g, IndexFault* fault) {
  FLOCK_GRID_STRIDE(e, n) {
    const int64_t off = target(g, index, wide, e, fault, kScatter);
    if (off >= 0) out[off] = src[e];
  }
}

// *p = f(*p) atomically, through a compare-and-swap on the aligned word holding *p.
template <class T, class F>
__device__ void atomic_update(T* p, F f) {
  if constexpr (sizeof(T) == 8 || sizeof(T) == 4) {
    using W = std::conditional_t<sizeof(T) == 8, unsigned long long, unsigned int>;
    W* w = reinterpret_cast<W*>(p);
    W old = *w, assumed;
    do {
      assumed = old;
      T cur, next;
      memcpy(&cur, &assumed, sizeof(T));
      next = f(cur);
      W bits;
      memcpy(&bits, &next, sizeof(T));
      old = atomicCAS(w, assumed, bits);
    } while (old != assumed);
  } else {
    const uintptr_t addr = reinterpret_cast<uintptr_t>(p);
    unsigned int* w = reinterpret_cast<unsigned int*>(addr & ~uintptr_t(3));
    const unsigned shift = static_cast<unsigned>(addr & 3) * 8;
    const unsigned mask = sizeof(T) == 2 ? 0xffffu : 0xffu;
    unsigned int old = *w, assumed;
    do {
      assumed = old;
      const unsigned part = (assumed >> shift) & mask;
      T cur;
      memcpy(&cur, &part, sizeof(T));  // little-endian: the low bytes of `part`
      const T next = f(cur);
      unsigned nb = 0;
      memcpy(&nb, &next, sizeof(T));
      old = atomicCAS(w, assumed, (assumed & ~(mask << shift)) | ((nb & mask) << shift));
    } while (old != assumed);
  }
}

using scatter_math::combine;
using scatter_math::identity;

// Without include_self, every target starts from the reduction's identity.
template <class T>
__global__ void scatter_identity_kernel(ScatterReduceOp op, T* out, const void* index, bool wide, int64_t n, IndexPlan g) {
  FLOCK_GRID_STRIDE(e, n) {
    const int64_t off = target(g, index, wide, e, nullptr, 0);
    if (off >= 0) out[off] = Num<T>::store(identity<typename Num<T>::C>(op));
  }
}

template <class T>
__global__ void scatter_reduce_kernel(ScatterReduceOp op, T* out, const void* index, bool wide, const T* src, int64_t n,
                                      IndexPlan g, unsigned long long* count, IndexFault* fault) {
  using C = typename Num<T>::C;
  FLOCK_GRID_STRIDE(e, n) {
    const int64_t off = target(g, index, wide, e, fault, kScatterReduce);
    if (off < 0) continue;
    const C v = Num<T>::load(src[e]);
    atomic_update(out + off, [&](T cur) { return Num<T>::store(combine<C>(op, Num<T>::load(cur), v)); });
    if (count) atomicAdd(count + off, 1ull);
  }
}

__global__ void fill_count_kernel(int64_t* count, int64_t n, int64_t v) { FLOCK_GRID_STRIDE(i, n) count[i] = v; }

template <class T>
__global__ void scatter_mean_kernel(T* out, const int64_t* count, int64_t n) {
  using C = typename Num<T>::C;
  FLOCK_GRID_STRIDE(i, n) {
    const int64_t c = count[i];
    if (c <= 1) continue;
    const C v = Num<T>::load(out[i]);
    if constexpr (std::is_floating_point_v<C>) {
      out[i] = Num<T>::store(v / static_cast<C>(c));
    } else {  // floor division, as torch's integer mean
      const int64_t a = static_cast<int64_t>(v), q = a / c;
      out[i] = static_cast<T>(q - ((a % c != 0 && a < 0) ? 1 : 0));
    }
  }
}

void scatter_cuda(Tensor& out, const Tensor& index, const Tensor& src, int64_t dim) {
  const int64_t n = index.numel();
  if (n == 0) return;
  const IndexPlan g = make_index_plan("scatter", out.shape, index.shape, dim);
  cudaStream_t s = current_stream();
  IndexFault* fault = current_index_fault();
  const bool wide = index.dtype == DType::i64;
  switch (dtype_size(out.dtype)) {
    case 1:
      FLOCK_LAUNCH(grid_for(n), kThreads, 0, s, scatter_kernel<uint8_t>)
      (static_cast<uint8_t*>(out.raw()), index.raw(), wide, static_cast<const uint8_t*>(src.raw()), n, g, fault);
      break;
    case 2:
      FLOCK_LAUNCH(grid_for(n), kThreads, 0, s, scatter_kernel<uint16_t>)
      (static_cast<uint16_t*>(out.raw()), index.raw(), wide, static_cast<const uint16_t*>(src.raw()), n, g, fault);
      break;
    case 4:
      FLOCK_LAUNCH(grid_for(n), kThreads, 0, s, scatter_kernel<uint32_t>)
      (static_cast<uint32_t*>(out.raw()), index.raw(), wide, static_cast<const uint32_t*>(src.raw()), n, g, fault);
      break;
    default:
      FLOCK_LAUNCH(grid_for(n), kThreads, 0, s, scatter_kernel<uint64_t>)
      (static_cast<uint64_t*>(out.raw()), index.raw(), wide, static_cast<const uint64_t*>(src.raw()), n, g, fault);
      break;
  }
  check_launch("scatter_kernel");
}

void scatter_reduce_cuda(ScatterReduceOp op, Tensor& out, const Tensor& index, const Tensor& src, int64_t dim, bool include_self,
                         Tensor& count) {
  const int64_t n = index.numel(), total = out.numel();
  if (n == 0) return;
  const IndexPlan g = make_index_plan("scatter", out.shape, index.shape, dim);
  cudaStream_t s = current_stream();
  IndexFault* fault = current_index_fault();
  const bool wide = index.dtype == DType::i64, mean = op == ScatterReduceOp::mean;
  if (mean) {
    FLOCK_LAUNCH(grid_for(total), kThreads, 0, s, fill_count_kernel)(count.data<int64_t>(), total, include_self ? 1 : 0);
    check_launch("fill_count_kernel");
  }
  visit_numeric(out.dtype, "scatterReduce", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {
      fail(Code::DType, "scatterReduce: not defined for bool tensors");
    } else {
      if (!include_self) {
        FLOCK_LAUNCH(grid_for(n), kThreads, 0, s, scatter_identity_kernel<T>)(op, out.data<T>(), index.raw(), wide, n, g);
        check_launch("scatter_identity_kernel");
      }
      auto* cnt = mean ? reinterpret_cast<unsigned long long*>(count.raw()) : nullptr;
      FLOCK_LAUNCH(grid_for(n), kThreads, 0, s, scatter_reduce_kernel<T>)
      (op, out.data<T>(), index.raw(), wide, src.data<T>(), n, g, cnt, fault);
      check_launch("scatter_reduce_kernel");
      if (mean) {
        FLOCK_LAUNCH(grid_for(total), kThreads, 0, s, scatter_mean_kernel<T>)(out.data<T>(), count.data<int64_t>(), total);
        check_launch("scatter_mean_kernel");
      }
    }
  });
}

}  // namespace

FLOCK_REGISTER_KERNEL(scatter, CUDA, scatter_cuda);
FLOCK_REGISTER_KERNEL(scatter_reduce, CUDA, scatter_reduce_cuda);

}  // namespace flock::cuda
