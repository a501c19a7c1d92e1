// CUDA 2-D pooling with the CPU backend's semantics: max pooling keeps the CPU's select rule
// (ties keep the first element in row-major window order, a NaN is taken like PyTorch) and its
// flat H·W argmax; average windows and divisors (count_include_pad, ceil-mode tails, adaptive bins)
// come from the same formula. Forward is a thread per output. Backward is a gather, a thread per
// input element summing the outputs whose windows cover it: no atomics, and the terms are added
// in the CPU's order (outputs in row-major order), so results agree bit for bit.
#include <algorithm>
#include <cstdint>
#include "common.cuh"
#include "nn_kernels.h"

namespace flock::cuda {
namespace {

// Plain-int64 geometry for device code.
struct PoolDims {
  int64_t planes, h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw;
  bool count_include_pad, adaptive;
};

struct Window {
  int64_t y0, y1, x0, x1, count;
};

// Rows [y0, y1), cols [x0, x1) of output (oy, ox), clipped to the input, and its divisor.
__device__ __forceinline__ Window avg_window(const PoolDims& d, int64_t oy, int64_t ox) {
  if (d.adaptive) {
    const int64_t y0 = oy * d.h / d.oh, y1 = ((oy + 1) * d.h + d.oh - 1) / d.oh;
    const int64_t x0 = ox * d.w / d.ow, x1 = ((ox + 1) * d.w + d.ow - 1) / d.ow;
    return {y0, y1, x0, x1, (y1 - y0) * (x1 - x0)};
  }
  int64_t y0 = oy * d.sh - d.ph, x0 = ox * d.sw - d.pw;
  int64_t y1 = min(y0 + d.kh, d.h + d.ph), x1 = min(x0 + d.kw, d.w + d.pw);
  const int64_t padded = (y1 - y0) * (x1 - x0);
  y0 = max(y0, int64_t(0));
  x0 = max(x0, int64_t(0));
  y1 = min(y1, d.h);
  x1 = min(x1, d.w);
  return {y0, y1, x0, x1, d.count_include_pad ? padded : (y1 - y0) * (x1 - x0)};
}

template <class T>
__global__ void max_pool2d_forward_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t* __restrict__ idx, PoolDims d) {
  const int64_t ohw = d.oh * d.ow;
  FLOCK_GRID_STRIDE(o, d.planes * ohw) {
    const int64_t p = o / ohw, oy = (o % ohw) / d.ow, ox = o % d.ow;
    const T* plane = x + p * d.h * d.w;
    const int64_t y0 = oy * d.sh - d.ph, x0 = ox * d.sw - d.pw;
    T best = -INFINITY;
    int64_t at = -1, first = -1;
    for (int64_t i = 0; i < d.kh; ++i) {
      const int64_t iy = y0 + i * d.dh;
      if (iy < 0 || iy >= d.h) continue;
      for (int64_t j = 0; j < d.kw; ++j) {
        const int64_t ix = x0 + j * d.dw;
        if (ix < 0 || ix >= d.w) continue;
        const T v = plane[iy * d.w + ix];
        const int64_t pos = iy * d.w + ix;
        if (first < 0) first = pos;
        // The CPU's rule exactly: a NaN is taken and then kept (v > NaN is false), as in PyTorch.
        if (v > best || v != v) {
          best = v;
          at = pos;
        }
      }
    }
    if (at < 0) at = first;  // a window of -inf values points at its first element
    y[o] = best;
    idx[o] = at;
  }
}

// Outputs whose max window could hold input row iy: oy·s − p + i·dil = iy for some tap i. Taps
// run from last to first so oy, and the order of the sum, ascends.
template <class T>
__global__ void max_pool2d_backward_kernel(const T* __restrict__ gy, const int64_t* __restrict__ idx, T* __restrict__ gx,
                                           PoolDims d) {
  const int64_t hw = d.h * d.w, ohw = d.oh * d.ow;
  FLOCK_GRID_STRIDE(e, d.planes * hw) {
    const int64_t p = e / hw, pos = e % hw, iy = pos / d.w, ix = pos % d.w;
    const T* gp = gy + p * ohw;
    const int64_t* ip = idx + p * ohw;
    T s = T(0);
    for (int64_t i = d.kh - 1; i >= 0; --i) {
      const int64_t ty = iy + d.ph - i * d.dh;
      if (ty < 0 || ty % d.sh) continue;
      const int64_t oy = ty / d.sh;
      if (oy >= d.oh) continue;
      for (int64_t j = d.kw - 1; j >= 0; --j) {
        const int64_t tx = ix + d.pw - j * d.dw;
        if (tx < 0 || tx % d.sw) continue;
        const int64_t ox = tx / d.sw;
        if (ox >= d.ow) continue;
        const int64_t o = oy * d.ow + ox;
        if (ip[o] == pos) s += gp[o];
      }
    }
    gx[e] = s;
  }
}

template <class T>
__global__ void avg_pool2d_forward_kernel(const T* __restrict__ x, T* __restrict__ y, PoolDims d) {
  const int64_t ohw = d.oh * d.ow;
  FLOCK_GRID_STRIDE(o, d.planes * ohw) {
    const int64_t p = o / ohw, oy = (o % ohw) / d.ow, ox = o % d.ow;
    const T* plane = x + p * d.h * d.w;
    const Window wd = avg_window(d, oy, ox);
    T s = T(0);
    for (int64_t iy = wd.y0; iy < wd.y1; ++iy)
      for (int64_t ix = wd.x0; ix < wd.x1; ++ix) s += plane[iy * d.w + ix];
    y[o] = wd.count > 0 ? s / T(wd.count) : T(0);
  }
}

// The output rows whose window may cover input row `i` of `in` (a superset; callers test the
// window itself): fixed windows start at o·s − p and span k; adaptive bins start at ⌊o·in/out⌋.
__device__ __forceinline__ void covering(int64_t i, int64_t in, int64_t out, int64_t k, int64_t s, int64_t p, bool adaptive,
                                         int64_t* lo, int64_t* hi) {
  if (adaptive) {
    *lo = max(int64_t(0), i * out / in - 1);
    *hi = min(out - 1, ((i + 1) * out + in - 1) / in);
  } else {
    const int64_t t = i + p - k;  // o·s > t is needed for the window to reach row i
    *lo = t < 0 ? 0 : t / s + 1;
    *hi = min(out - 1, (i + p) / s);
  }
}

template <class T>
__global__ void avg_pool2d_backward_kernel(const T* __restrict__ gy, T* __restrict__ gx, PoolDims d) {
  const int64_t hw = d.h * d.w, ohw = d.oh * d.ow;
  FLOCK_GRID_STRIDE(e, d.planes * hw) {
    const int64_t p = e / hw, iy = (e % hw) / d.w, ix = e % d.w;
    const T* gp = gy + p * ohw;
    int64_t oy0, oy1, ox0, ox1;
    covering(iy, d.h, d.oh, d.kh, d.sh, d.ph, d.adaptive, &oy0, &oy1);
    covering(ix, d.w, d.ow, d.kw, d.sw, d.pw, d.adaptive, &ox0, &ox1);
    T s = T(0);
    for (int64_t oy = oy0; oy <= oy1; ++oy)
      for (int64_t ox = ox0; ox <= ox1; ++ox) {
        const Window wd = avg_window(d, oy, ox);
        if (wd.count <= 0 || iy < wd.y0 || iy >= wd.y1 || ix < wd.x0 || ix >= wd.x1) continue;
        s += gp[oy * d.ow + ox] / T(wd.count);
      }
    gx[e] = s;
  }
}

void expect(const Tensor& t, const Shape& shape, DType dtype, const char* op, const char* name) {
  if (t.device().type != DeviceType::CUDA)
    fail(Code::Device, op, ": ", name, " is on ", t.device().str(), ", expected a CUDA device");
  if (t.dtype != dtype) fail(Code::DType, op, ": ", name, " is ", dtype_name(t.dtype), ", expected ", dtype_name(dtype));
  if (t.shape != shape) fail(Code::Shape, op, ": ", name, " has shape ", shape_str(t.shape), ", expected ", shape_str(shape));
}

PoolDims dims_of(const Pool2dGeom& g, DType dtype, bool adaptive, const char* op) {
  if (dtype != DType::f32 && dtype != DType::f64) fail(Code::DType, op, ": expected f32 or f64, got ", dtype_name(dtype));
  if (g.oh < 1 || g.ow < 1 || g.h < 0 || g.w < 0 || g.n < 0 || g.c < 0) fail(Code::Shape, op, ": empty output ", g.oh, "x", g.ow);
  if (!adaptive && (g.kh < 1 || g.kw < 1 || g.sh < 1 || g.sw < 1 || g.dh < 1 || g.dw < 1 || g.ph < 0 || g.pw < 0))
    fail(Code::Arg, op, ": kernel size, stride and dilation must be ≥ 1 and padding ≥ 0");
  return PoolDims{g.n * g.c, g.h, g.w, g.oh, g.ow, g.kh, g.kw, g.sh, g.sw, g.ph, g.pw, g.dh, g.dw, g.count_include_pad, adaptive};
}

template <class Fn>
void by_dtype(DType t, Fn&& fn) {
  if (t == DType::f64)
    fn(type_tag<double>{});
  else
    fn(type_tag<float>{});
}

void max_pool2d_forward_cuda(const Tensor& x, Tensor& y, Tensor& indices, const Pool2dGeom& g) {
  const char* op = "maxPool2d";
  const PoolDims d = dims_of(g, x.dtype, false, op);
  expect(x, {g.n, g.c, g.h, g.w}, x.dtype, op, "input");
  expect(y, {g.n, g.c, g.oh, g.ow}, x.dtype, op, "output");
  expect(indices, {g.n, g.c, g.oh, g.ow}, DType::i64, op, "indices");
  const int64_t n = y.numel();
  if (n == 0) return;
  cudaStream_t s = current_stream();
  by_dtype(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    FLOCK_LAUNCH(grid_for(n), kThreads, 0, s, max_pool2d_forward_kernel<T>)(x.data<T>(), y.data<T>(), indices.data<int64_t>(), d);
  });
  check_launch("max_pool2d_forward_kernel");
}

void max_pool2d_backward_cuda(const Tensor& gy, const Tensor& indices, Tensor& gx, const Pool2dGeom& g) {
  const char* op = "maxPool2dBackward";
  const PoolDims d = dims_of(g, gy.dtype, false, op);
  expect(gy, {g.n, g.c, g.oh, g.ow}, gy.dtype, op, "grad");
  expect(indices, {g.n, g.c, g.oh, g.ow}, DType::i64, op, "indices");
  expect(gx, {g.n, g.c, g.h, g.w}, gy.dtype, op, "input grad");
  const int64_t n = gx.numel();
  if (n == 0) return;
  cudaStream_t s = current_stream();
  by_dtype(gy.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    FLOCK_LAUNCH(grid_for(n), kThreads, 0, s, max_pool2d_backward_kernel<T>)
    (gy.data<T>(), indices.data<int64_t>(), gx.data<T>(), d);
  });
  check_launch("max_pool2d_backward_kernel");
}

void avg_pool2d_forward_cuda(const Tensor& x, Tensor& y, const Pool2dGeom& g, bool adaptive) {
  const char* op = adaptive ? "adaptiveAvgPool2d" : "avgPool2d";
  const PoolDims d = dims_of(g, x.dtype, adaptive, op);
  expect(x, {g.n, g.c, g.h, g.w}, x.dtype, op, "input");
  expect(y, {g.n, g.c, g.oh, g.ow}, x.dtype, op, "output");
  const int64_t n = y.numel();
  if (n == 0) return;
  cudaStream_t s = current_stream();
  by_dtype(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    FLOCK_LAUNCH(grid_for(n), kThreads, 0, s, avg_pool2d_forward_kernel<T>)(x.data<T>(), y.data<T>(), d);
  });
  check_launch("avg_pool2d_forward_kernel");
}

void avg_pool2d_backward_cuda(const Tensor& gy, Tensor& gx, const Pool2dGeom& g, bool adaptive) {
  const char* op = adaptive ? "adaptiveAvgPool2dBackward" : "avgPool2dBackward";
  const PoolDims d = dims_of(g, gy.dtype, adaptive, op);
  expect(gy, {g.n, g.c, g.oh, g.ow}, gy.dtype, op, "grad");
  expect(gx, {g.n, g.c, g.h, g.w}, gy.dtype, op, "input grad");
  const int64_t n = gx.numel();
  if (n == 0) return;
  cudaStream_t s = current_stream();
  by_dtype(gy.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    FLOCK_LAUNCH(grid_for(n), kThreads, 0, s, avg_pool2d_backward_kernel<T>)(gy.data<T>(), gx.data<T>(), d);
  });
  check_launch("avg_pool2d_backward_kernel");
}

}  // namespace

FLOCK_REGISTER_KERNEL(max_pool2d_forward, CUDA, max_pool2d_forward_cuda);
FLOCK_REGISTER_KERNEL(max_pool2d_backward, CUDA, max_pool2d_backward_cuda);
FLOCK_REGISTER_KERNEL(avg_pool2d_forward, CUDA, avg_pool2d_forward_cuda);
FLOCK_REGISTER_KERNEL(avg_pool2d_backward, CUDA, avg_pool2d_backward_cuda);

}  // namespace flock::cuda
