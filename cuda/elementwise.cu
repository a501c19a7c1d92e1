// CUDA element-wise kernels: fill, cast, arange, unary (and derivative), binary with NumPy
// broadcasting, where. Formulas come from scalar_math.h, shared with the CPU, so both backends
// compute the same function; the op is a run-time switch (uniform across a warp, so it costs a
// branch, not divergence) to keep one instantiation per dtype.
#include <type_traits>
#include "common.cuh"
#include "kernels.h"
#include "binary_math.h"
#include "scalar_math.h"
#include "generated/unary_codes.h"
#include "generated/binary_codes.h"

namespace flock::cuda {
namespace {

template <class T>
__global__ void fill_kernel(T* out, int64_t n, T v) {
  FLOCK_GRID_STRIDE(i, n) out[i] = v;
}

template <class S, class D>
__global__ void cast_kernel(const S* src, D* out, int64_t n) {
  FLOCK_GRID_STRIDE(i, n) {
    if constexpr (std::is_same_v<D, bool>)
      out[i] = Num<S>::load(src[i]) != typename Num<S>::C(0);
    else
      out[i] = Num<D>::from_double(Num<S>::to_double(src[i]));
  }
}

template <class T>
__global__ void arange_kernel(T* out, int64_t n, double start, double step) {
  FLOCK_GRID_STRIDE(i, n) out[i] = Num<T>::from_double(start + step * static_cast<double>(i));
}

// Integers compute in double, as on the CPU (only sign-safe ops reach them).
template <class T>
using unary_c = std::conditional_t<std::is_integral_v<T>, double, acc_t<T>>;

template <class T>
__global__ void unary_forward_kernel(UnaryOp op, const T* x, T* out, int64_t n, unary_c<T> a, unary_c<T> b) {
  using C = unary_c<T>;
  FLOCK_GRID_STRIDE(i, n) {
    const C v = static_cast<C>(Num<T>::load(x[i]));
    out[i] = Num<T>::store(static_cast<typename Num<T>::C>(math::unary<C>(op, v, a, b)));
  }
}

template <class T>
__global__ void unary_predicate_kernel(UnaryOp op, const T* x, bool* out, int64_t n) {
  FLOCK_GRID_STRIDE(i, n) out[i] = math::predicate<acc_t<T>>(op, Num<T>::load(x[i]));
}

template <class T>
__global__ void unary_backward_kernel(UnaryOp op, const T* x, const T* gy, T* gx, int64_t n, acc_t<T> a, acc_t<T> b) {
  using C = acc_t<T>;
  FLOCK_GRID_STRIDE(i, n) {
    gx[i] = Num<T>::store(Num<T>::load(gy[i]) * math::unary_derivative<C>(op, Num<T>::load(x[i]), a, b));
  }
}

template <class T, class O>
__global__ void binary_forward_kernel(BinaryOp op, const T* a, const T* b, O* out, int64_t n, Broadcast<2> bc, bool dense) {
  using C = typename Num<T>::C;
  FLOCK_GRID_STRIDE(i, n) {
    int64_t off[2] = {i, i};
    if (!dense) bc.offsets(i, off);
    const C x = Num<T>::load(a[off[0]]), y = Num<T>::load(b[off[1]]);
    if constexpr (std::is_same_v<O, bool>) {
      out[i] = math::compare<C>(op, x, y);
    } else {
      out[i] = Num<T>::store(math::binary<C>(op, x, y));
    }
  }
}

template <class T>
__global__ void where_kernel(const bool* cond, const T* a, const T* b, T* out, int64_t n, Broadcast<3> bc) {
  FLOCK_GRID_STRIDE(i, n) {
    int64_t off[3];
    bc.offsets(i, off);
    out[i] = cond[off[0]] ? a[off[1]] : b[off[2]];
  }
}

void fill_cuda(Tensor& out, double value) {
  const int64_t n = out.numel();
  if (n == 0) return;
  cudaStream_t s = current_stream();
  visit(out.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    FLOCK_LAUNCH(grid_for(n), kThreads, 0, s, fill_kernel<T>)(out.data<T>(), n, from_double<T>(value));
  });
  check_launch("fill_kernel");
}

void cast_cuda(const Tensor& src, Tensor& out) {
  const int64_t n = out.numel();
  if (n == 0) return;
  cudaStream_t s = current_stream();
  if (src.dtype == out.dtype) {
    check(cudaMemcpyAsync(out.raw(), src.raw(), out.nbytes(), cudaMemcpyDeviceToDevice, s), "cast: cudaMemcpyAsync");
    return;
  }
  visit(src.dtype, [&](auto st) {
    using S = typename decltype(st)::type;
    visit(out.dtype, [&](auto dt) {
      using D = typename decltype(dt)::type;
      FLOCK_LAUNCH(grid_for(n), kThreads, 0, s, cast_kernel<S, D>)(src.data<S>(), out.data<D>(), n);
    });
  });
  check_launch("cast_kernel");
}

void arange_cuda(Tensor& out, double start, double step) {
  const int64_t n = out.numel();
  if (n == 0) return;
  cudaStream_t s = current_stream();
  visit_numeric(out.dtype, "arange", [&](auto tag) {
    using T = typename decltype(tag)::type;
    FLOCK_LAUNCH(grid_for(n), kThreads, 0, s, arange_kernel<T>)(out.data<T>(), n, start, step);
  });
  check_launch("arange_kernel");
}

void unary_cuda(UnaryOp op, const Tensor& x, Tensor& out, double a, double b) {
  const int64_t n = x.numel();
  if (n == 0) return;
  cudaStream_t s = current_stream();
  if (unary_is_predicate(op)) {
    visit_float(x.dtype, "unary", [&](auto tag) {
      using T = typename decltype(tag)::type;
      FLOCK_LAUNCH(grid_for(n), kThreads, 0, s, unary_predicate_kernel<T>)(op, x.data<T>(), out.data<bool>(), n);
    });
    check_launch("unary_predicate_kernel");
    return;
  }
  visit_numeric(x.dtype, "unary", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = unary_c<T>;
    FLOCK_LAUNCH(grid_for(n), kThreads, 0, s, unary_forward_kernel<T>)
    (op, x.data<T>(), out.data<T>(), n, static_cast<C>(a), static_cast<C>(b));
  });
  check_launch("unary_forward_kernel");
}

void unary_backward_cuda(UnaryOp op, const Tensor& x, const Tensor& gy, Tensor& gx, double a, double b) {
  const int64_t n = x.numel();
  if (n == 0) return;
  cudaStream_t s = current_stream();
  visit_float(x.dtype, "unary_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = acc_t<T>;
    FLOCK_LAUNCH(grid_for(n), kThreads, 0, s, unary_backward_kernel<T>)
    (op, x.data<T>(), gy.data<T>(), gx.data<T>(), n, static_cast<C>(a), static_cast<C>(b));
  });
  check_launch("unary_backward_kernel");
}

void binary_cuda(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out) {
  const int64_t n = out.numel();
  if (n == 0) return;
  cudaStream_t s = current_stream();
  const Broadcast<2> bc = make_broadcast<2>(out.shape, {&a.shape, &b.shape});
  // Same-shape operands coalesce to one unit-stride dim: skip the index arithmetic entirely.
  const bool dense = bc.nd <= 1 && (bc.nd == 0 || (bc.stride[0][0] == 1 && bc.stride[1][0] == 1));
  const bool cmp = binary_is_comparison(op);
  visit(a.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (cmp) {
      FLOCK_LAUNCH(grid_for(n), kThreads, 0, s, binary_forward_kernel<T, bool>)
      (op, a.data<T>(), b.data<T>(), out.data<bool>(), n, bc, dense);
    } else if constexpr (std::is_same_v<T, bool>) {
      fail(Code::DType, "binary: arithmetic is not defined for bool tensors");
    } else {
      FLOCK_LAUNCH(grid_for(n), kThreads, 0, s, binary_forward_kernel<T, T>)
      (op, a.data<T>(), b.data<T>(), out.data<T>(), n, bc, dense);
    }
  });
  check_launch("binary_forward_kernel");
}

void where_cuda(const Tensor& cond, const Tensor& a, const Tensor& b, Tensor& out) {
  const int64_t n = out.numel();
  if (n == 0) return;
  cudaStream_t s = current_stream();
  const Broadcast<3> bc = make_broadcast<3>(out.shape, {&cond.shape, &a.shape, &b.shape});
  visit(a.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    FLOCK_LAUNCH(grid_for(n), kThreads, 0, s, where_kernel<T>)(cond.data<bool>(), a.data<T>(), b.data<T>(), out.data<T>(), n, bc);
  });
  check_launch("where_kernel");
}

}  // namespace

FLOCK_REGISTER_KERNEL(fill, CUDA, fill_cuda);
FLOCK_REGISTER_KERNEL(cast, CUDA, cast_cuda);
FLOCK_REGISTER_KERNEL(arange, CUDA, arange_cuda);
FLOCK_REGISTER_KERNEL(unary, CUDA, unary_cuda);
FLOCK_REGISTER_KERNEL(unary_backward, CUDA, unary_backward_cuda);
FLOCK_REGISTER_KERNEL(binary, CUDA, binary_cuda);
FLOCK_REGISTER_KERNEL(where, CUDA, where_cuda);

}  // namespace flock::cuda
