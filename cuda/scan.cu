// CUDA cumsum and cumprod along the middle dim of [outer, n, inner], and cumprod's gradient.
// Long rows (inner == 1) get a block each, scanned in tiles with cub::BlockScan and a carry;
// other shapes a thread per line walking n, so neighbouring threads read neighbouring columns.
// Floats accumulate in double and integers in int64, as the CPU does.
#include <cub/block/block_scan.cuh>
#include <type_traits>
#include "common.cuh"
#include "kernels.h"

namespace flock::cuda {
namespace {

constexpr int kScanThreads = 512;

template <class T>
using scan_acc_t = std::conditional_t<std::is_floating_point_v<acc_t<T>>, double, int64_t>;

template <class T, class A>
__device__ __forceinline__ A load_acc(T v) {
  return static_cast<A>(Num<T>::load(v));
}

template <class T, class A>
__device__ __forceinline__ T store_acc(A v) {
  if constexpr (std::is_floating_point_v<A>)
    return Num<T>::from_double(v);
  else
    return static_cast<T>(v);
}

struct Mul {
  template <class A>
  __device__ __forceinline__ A operator()(A a, A b) const {
    return a * b;
  }
};

template <class T>
__global__ void scan_rows_kernel(const T* x, T* out, int64_t n, bool prod, bool reverse) {
  using A = scan_acc_t<T>;
  using BlockScan = cub::BlockScan<A, kScanThreads>;
  __shared__ typename BlockScan::TempStorage temp;
  const T* xr = x + static_cast<int64_t>(blockIdx.x) * n;
  T* orow = out + static_cast<int64_t>(blockIdx.x) * n;
  A carry = prod ? A(1) : A(0);
  for (int64_t base = 0; base < n; base += kScanThreads) {
    const int64_t s = base + threadIdx.x;
    const int64_t r = reverse ? n - 1 - s : s;
    const A v = s < n ? load_acc<T, A>(xr[r]) : (prod ? A(1) : A(0));
    A incl, total;
    if (prod)
      BlockScan(temp).InclusiveScan(v, incl, Mul{}, total);
    else
      BlockScan(temp).InclusiveSum(v, incl, total);
    if (s < n) orow[r] = store_acc<T, A>(prod ? carry * incl : carry + incl);
    carry = prod ? carry * total : carry + total;
    __syncthreads();  // `temp` is reused by the next tile
  }
}

template <class T>
__global__ void scan_lines_kernel(const T* x, T* out, int64_t outer, int64_t n, int64_t inner, bool prod, bool reverse) {
  using A = scan_acc_t<T>;
  FLOCK_GRID_STRIDE(l, outer * inner) {
    const int64_t base = (l / inner) * n * inner + l % inner;
    A acc = prod ? A(1) : A(0);
    for (int64_t s = 0; s < n; ++s) {
      const int64_t at = base + (reverse ? n - 1 - s : s) * inner;
      const A v = load_acc<T, A>(x[at]);
      acc = prod ? acc * v : acc + v;
      out[at] = store_acc<T, A>(acc);
    }
  }
}

void scan_cuda(const Tensor& x, Tensor& out, int64_t outer, int64_t n, int64_t inner, bool prod, bool reverse) {
  if (outer * n * inner == 0) return;
  cudaStream_t s = current_stream();
  visit_numeric(x.dtype, prod ? "cumprod" : "cumsum", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (inner == 1 && n >= 64 && outer <= 0x7fffffff) {
      FLOCK_LAUNCH(static_cast<unsigned>(outer), kScanThreads, 0, s, scan_rows_kernel<T>)
      (x.data<T>(), out.data<T>(), n, prod, reverse);
    } else {
      FLOCK_LAUNCH(grid_for(outer * inner), kThreads, 0, s, scan_lines_kernel<T>)
      (x.data<T>(), out.data<T>(), outer, n, inner, prod, reverse);
    }
  });
  check_launch("scan_kernel");
}

// The CPU's algorithm (cpp/cpu/scan.cc), a thread per line; `pre` holds the line's prefix products.
template <class T>
__global__ void cumprod_backward_kernel(const T* x, const T* gy, T* gx, double* pre, int64_t outer, int64_t n, int64_t inner) {
  FLOCK_GRID_STRIDE(l, outer * inner) {
    const int64_t base = (l / inner) * n * inner + l % inner;
    auto at = [&](const T* p, int64_t r) { return Num<T>::to_double(p[base + r * inner]); };
    int64_t z = n;
    double p = 1;
    for (int64_t r = 0; r < n; ++r) {
      const double v = at(x, r);
      if (v == 0) {
        z = r;
        break;
      }
      p *= v;
      pre[base + r * inner] = p;
    }
    double tail = 0;
    for (int64_t r = n - 1; r >= 0; --r) {
      double g = 0;
      if (r < z) {
        tail += at(gy, r) * pre[base + r * inner];
        g = tail / at(x, r);
      } else if (r == z) {
        double q = z > 0 ? pre[base + (z - 1) * inner] : 1.0;
        g = at(gy, z) * q;
        for (int64_t j = z + 1; j < n; ++j) {
          q *= at(x, j);
          g += at(gy, j) * q;
        }
      }
      gx[base + r * inner] = Num<T>::from_double(g);
    }
  }
}

void cumprod_backward_cuda(const Tensor& x, const Tensor& gy, Tensor& gx, int64_t outer, int64_t n, int64_t inner) {
  if (outer * n * inner == 0) return;
  cudaStream_t s = current_stream();
  Tensor pre = empty(x.shape, DType::f64, x.device(), "cumprod");  // freed on this stream after the kernel
  visit_float(x.dtype, "cumprod", [&](auto tag) {
    using T = typename decltype(tag)::type;
    FLOCK_LAUNCH(grid_for(outer * inner), kThreads, 0, s, cumprod_backward_kernel<T>)
    (x.data<T>(), gy.data<T>(), gx.data<T>(), pre.data<double>(), outer, n, inner);
  });
  check_launch("cumprod_backward_kernel");
}

}  // namespace

FLOCK_REGISTER_KERNEL(scan, CUDA, scan_cuda);
FLOCK_REGISTER_KERNEL(cumprod_backward, CUDA, cumprod_backward_cuda);

}  // namespace flock::cuda
