// CUDA 2-D convolution as implicit GEMM: the im2col matrix of the CPU backend is never stored;
// each 64×64 output tile stages 16-deep slices of both operands in shared memory, gathering the
// input (or output gradient) through the convolution geometry while it loads. Per group:
//   forward          y[o, pixel]   = Σ_k  w[o, k]·col[k, pixel]        k = (c, i, j), + bias
//   backward input   gx[c, pixel]  = Σ_k' w[o, c, i, j]·gy[o, oy, ox]  k' = (o, i, j), the taps that
//                                    land on the pixel (others read as 0)
//   backward weight  gw[o, k]      = Σ_p  gy[o, p]·col[k, p]          p over N·OH·OW, split over
//                                    blocks into partial sums that a second kernel adds in order
// The GEMM's column axis runs over N·pixels, so small images still fill the grid.
#include <algorithm>
#include <cstdint>
#include <limits>
#include "common.cuh"
#include "simt_tile.cuh"
#include "nn_kernels.h"

namespace flock::cuda {
namespace {

constexpr int kConvThreads = 256;
constexpr unsigned kMaxGridYZ = 65535;

// Geometry with the derived sizes a kernel needs; the tap index k = (c·KH + i)·KW + j stays in
// 32 bits (the launcher checks), because its div/mod runs for every staged element.
struct ConvDims {
  int64_t n, c, h, w, oc, oh, ow;
  int kh, kw, sh, sw, ph, pw, dh, dw;
  int groups, cg, ocg;
  int taps;  // kh·kw
  int k;     // cg·kh·kw, the forward reduction length
};

// Rows: output channels of the group; columns: (n, oy, ox) over the whole batch.
template <class T>
__global__ void __launch_bounds__(kConvThreads) conv2d_forward_kernel(const T* __restrict__ x, const T* __restrict__ w,
                                                                      const T* __restrict__ bias, T* __restrict__ y, ConvDims d) {
  __shared__ T As[kDepth][kTile + 1];
  __shared__ T Bs[kDepth][kTile + 1];
  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  const int64_t ohw = d.oh * d.ow, cols = d.n * ohw;
  const int64_t col0 = static_cast<int64_t>(blockIdx.x) * kTile;
  // This thread always stages column bj of the input slice (rows bk + 4r): decompose it once.
  const int bj = tid % kTile, bk = tid / kTile;
  const int64_t col = col0 + bj;
  const bool col_ok = col < cols;
  const int64_t bn = col_ok ? col / ohw : 0, bp = col_ok ? col % ohw : 0;
  const int64_t iy0 = (bp / d.ow) * d.sh - d.ph, ix0 = (bp % d.ow) * d.sw - d.pw;
  const int row_tiles = (d.ocg + kTile - 1) / kTile;
  for (int gi = blockIdx.z; gi < d.groups; gi += gridDim.z) {
    const T* xg = x + (bn * d.c + static_cast<int64_t>(gi) * d.cg) * d.h * d.w;
    const T* wg = w + static_cast<int64_t>(gi) * d.ocg * d.k;
    for (int rt = blockIdx.y; rt < row_tiles; rt += gridDim.y) {
      const int row0 = rt * kTile;
      T acc[4][4] = {};
      for (int k0 = 0; k0 < d.k; k0 += kDepth) {
        // Weights: 16 consecutive taps of a row are contiguous, so the fast index runs along k.
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          const int e = tid + kConvThreads * r, i = e / kDepth, kk = e % kDepth;
          const int o = row0 + i, k = k0 + kk;
          As[kk][i] = (o < d.ocg && k < d.k) ? wg[static_cast<int64_t>(o) * d.k + k] : T(0);
        }
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          const int kk = bk + 4 * r, k = k0 + kk;
          T v = T(0);
          if (col_ok && k < d.k) {
            const int c = k / d.taps, t = k % d.taps;
            const int64_t iy = iy0 + static_cast<int64_t>(t / d.kw) * d.dh, ix = ix0 + static_cast<int64_t>(t % d.kw) * d.dw;
            if (iy >= 0 && iy < d.h && ix >= 0 && ix < d.w) v = xg[(c * d.h + iy) * d.w + ix];
          }
          Bs[kk][bj] = v;
        }
        __syncthreads();
        tile_mma(As, Bs, acc, tx, ty);
        __syncthreads();
      }
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const int64_t cq = col0 + tx + 16 * q;
        if (cq >= cols) continue;
        const int64_t n = cq / ohw, p = cq % ohw;
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          const int o = row0 + ty + 16 * r;
          if (o >= d.ocg) continue;
          const int64_t oc = static_cast<int64_t>(gi) * d.ocg + o;
          y[(n * d.oc + oc) * ohw + p] = bias ? acc[r][q] + bias[oc] : acc[r][q];
        }
      }
    }
  }
}

// Rows: input channels of the group; columns: (n, iy, ix); reduction over (o, i, j). A tap reads
// gy[oy, ox] only where iy + ph − i·dh is a non-negative multiple of the stride inside the output.
template <class T>
__global__ void __launch_bounds__(kConvThreads)
    conv2d_backward_input_kernel(const T* __restrict__ gy, const T* __restrict__ w, T* __restrict__ gx, ConvDims d) {
  __shared__ T As[kDepth][kTile + 1];
  __shared__ T Bs[kDepth][kTile + 1];
  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  const int64_t hw = d.h * d.w, ohw = d.oh * d.ow, cols = d.n * hw;
  const int red = d.ocg * d.taps;
  const int64_t col0 = static_cast<int64_t>(blockIdx.x) * kTile;
  const int bj = tid % kTile, bk = tid / kTile;
  const int64_t col = col0 + bj;
  const bool col_ok = col < cols;
  const int64_t bn = col_ok ? col / hw : 0, bp = col_ok ? col % hw : 0;
  const int64_t iyp = bp / d.w + d.ph, ixp = bp % d.w + d.pw;
  const int row_tiles = (d.cg + kTile - 1) / kTile;
  for (int gi = blockIdx.z; gi < d.groups; gi += gridDim.z) {
    const T* gyg = gy + (bn * d.oc + static_cast<int64_t>(gi) * d.ocg) * ohw;
    const T* wg = w + static_cast<int64_t>(gi) * d.ocg * d.k;
    for (int rt = blockIdx.y; rt < row_tiles; rt += gridDim.y) {
      const int row0 = rt * kTile;
      T acc[4][4] = {};
      for (int k0 = 0; k0 < red; k0 += kDepth) {
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          const int e = tid + kConvThreads * r, i = e / kDepth, kk = e % kDepth;
          const int c = row0 + i, k = k0 + kk;
          T v = T(0);
          if (c < d.cg && k < red) {
            const int o = k / d.taps, t = k % d.taps;
            v = wg[static_cast<int64_t>(o) * d.k + c * d.taps + t];
          }
          As[kk][i] = v;
        }
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          const int kk = bk + 4 * r, k = k0 + kk;
          T v = T(0);
          if (col_ok && k < red) {
            const int o = k / d.taps, t = k % d.taps;
            const int64_t sy = iyp - static_cast<int64_t>(t / d.kw) * d.dh, sx = ixp - static_cast<int64_t>(t % d.kw) * d.dw;
            if (sy >= 0 && sx >= 0 && sy % d.sh == 0 && sx % d.sw == 0) {
              const int64_t oy = sy / d.sh, ox = sx / d.sw;
              if (oy < d.oh && ox < d.ow) v = gyg[static_cast<int64_t>(o) * ohw + oy * d.ow + ox];
            }
          }
          Bs[kk][bj] = v;
        }
        __syncthreads();
        tile_mma(As, Bs, acc, tx, ty);
        __syncthreads();
      }
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const int64_t cq = col0 + tx + 16 * q;
        if (cq >= cols) continue;
        const int64_t n = cq / hw, p = cq % hw;
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          const int c = row0 + ty + 16 * r;
          if (c < d.cg) gx[(n * d.c + static_cast<int64_t>(gi) * d.cg + c) * hw + p] = acc[r][q];
        }
      }
    }
  }
}

// Rows: output channels of the group; columns: taps k; reduction over (n, oy, ox), cut into
// `splits` slices of `chunk` columns. Slice s writes its partial tile to out + s·slice_stride.
template <class T>
__global__ void __launch_bounds__(kConvThreads)
    conv2d_backward_weight_kernel(const T* __restrict__ x, const T* __restrict__ gy, T* __restrict__ out, ConvDims d, int splits,
                                  int64_t chunk, int64_t slice_stride) {
  __shared__ T As[kDepth][kTile + 1];
  __shared__ T Bs[kDepth][kTile + 1];
  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  const int64_t ohw = d.oh * d.ow, total = d.n * ohw;
  const int col0 = blockIdx.x * kTile;
  // This thread always stages tap bj of the input slice: decompose it once.
  const int bj = tid % kTile, bk = tid / kTile;
  const int tap = col0 + bj;
  const bool tap_ok = tap < d.k;
  const int bc = tap_ok ? tap / d.taps : 0, bt = tap_ok ? tap % d.taps : 0;
  const int64_t ti = static_cast<int64_t>(bt / d.kw) * d.dh - d.ph, tj = static_cast<int64_t>(bt % d.kw) * d.dw - d.pw;
  // The gy slice is staged with the reduction index fast: this thread's column is fixed per stage.
  const int ak = tid % kDepth, ai = tid / kDepth;
  const int row_tiles = (d.ocg + kTile - 1) / kTile;
  const int64_t zs = static_cast<int64_t>(d.groups) * splits;
  for (int64_t z = blockIdx.z; z < zs; z += gridDim.z) {
    const int gi = static_cast<int>(z / splits), s = static_cast<int>(z % splits);
    const int64_t p_begin = s * chunk, p_end = min(total, p_begin + chunk);
    for (int rt = blockIdx.y; rt < row_tiles; rt += gridDim.y) {
      const int row0 = rt * kTile;
      T acc[4][4] = {};
      for (int64_t p0 = p_begin; p0 < p_end; p0 += kDepth) {
        {
          const int64_t p = p0 + ak;
          const bool p_ok = p < p_end;
          const int64_t n = p_ok ? p / ohw : 0, pix = p_ok ? p % ohw : 0;
          const T* gyp = gy + (n * d.oc + static_cast<int64_t>(gi) * d.ocg) * ohw + pix;
#pragma unroll
          for (int r = 0; r < 4; ++r) {
            const int o = row0 + ai + 16 * r;
            As[ak][ai + 16 * r] = (p_ok && o < d.ocg) ? gyp[static_cast<int64_t>(o) * ohw] : T(0);
          }
        }
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          const int kk = bk + 4 * r;
          const int64_t p = p0 + kk;
          T v = T(0);
          if (tap_ok && p < p_end) {
            const int64_t n = p / ohw, pix = p % ohw;
            const int64_t iy = (pix / d.ow) * d.sh + ti, ix = (pix % d.ow) * d.sw + tj;
            if (iy >= 0 && iy < d.h && ix >= 0 && ix < d.w)
              v = x[((n * d.c + static_cast<int64_t>(gi) * d.cg + bc) * d.h + iy) * d.w + ix];
          }
          Bs[kk][bj] = v;
        }
        __syncthreads();
        tile_mma(As, Bs, acc, tx, ty);
        __syncthreads();
      }
      T* dst = out + s * slice_stride + static_cast<int64_t>(gi) * d.ocg * d.k;
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const int o = row0 + ty + 16 * r;
        if (o >= d.ocg) continue;
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          const int k = col0 + tx + 16 * q;
          if (k < d.k) dst[static_cast<int64_t>(o) * d.k + k] = acc[r][q];
        }
      }
    }
  }
}

// Adds the split partial sums in slice order, so the result does not depend on scheduling.
template <class T>
__global__ void sum_slices_kernel(const T* __restrict__ parts, T* __restrict__ out, int64_t n, int splits) {
  FLOCK_GRID_STRIDE(i, n) {
    T s = parts[i];
    for (int p = 1; p < splits; ++p) s += parts[p * n + i];
    out[i] = s;
  }
}

void expect(const Tensor& t, const Shape& shape, DType dtype, const char* op, const char* name) {
  if (t.device().type != DeviceType::CUDA)
    fail(Code::Device, op, ": ", name, " is on ", t.device().str(), ", expected a CUDA device");
  if (t.dtype != dtype) fail(Code::DType, op, ": ", name, " is ", dtype_name(t.dtype), ", expected ", dtype_name(dtype));
  if (t.shape != shape) fail(Code::Shape, op, ": ", name, " has shape ", shape_str(t.shape), ", expected ", shape_str(shape));
}

ConvDims dims_of(const Conv2dGeom& g, DType dtype, const char* op) {
  if (dtype != DType::f32 && dtype != DType::f64) fail(Code::DType, op, ": expected f32 or f64, got ", dtype_name(dtype));
  if (g.groups < 1 || g.c % g.groups || g.oc % g.groups)
    fail(Code::Shape, op, ": channels ", g.c, " and ", g.oc, " are not divisible by groups ", g.groups);
  // An empty kernel is allowed, as on the CPU: the reduction is empty and the output is the bias.
  if (g.sh < 1 || g.sw < 1 || g.dh < 1 || g.dw < 1 || g.ph < 0 || g.pw < 0 || g.kh < 0 || g.kw < 0)
    fail(Code::Arg, op, ": stride and dilation must be ≥ 1, padding and kernel size ≥ 0");
  if (g.oh != (g.h + 2 * g.ph - g.dh * (g.kh - 1) - 1) / g.sh + 1 || g.ow != (g.w + 2 * g.pw - g.dw * (g.kw - 1) - 1) / g.sw + 1)
    fail(Code::Shape, op, ": output ", g.oh, "x", g.ow, " does not follow from the geometry");
  constexpr int64_t lim = std::numeric_limits<int>::max();
  const int64_t cg = g.c / g.groups, ocg = g.oc / g.groups;
  // 32-bit tap arithmetic in the kernels; every such product must fit.
  if (g.kh * g.kw > lim || cg * g.kh * g.kw > lim || ocg * g.kh * g.kw > lim || g.groups > lim || g.sh > lim || g.sw > lim ||
      g.ph > lim || g.pw > lim || g.dh > lim || g.dw > lim || ceil_div(ocg, kTile) > lim || ceil_div(cg, kTile) > lim)
    fail(Code::Shape, op, ": kernel of ", cg, "x", g.kh, "x", g.kw, " taps per output channel is too large");
  ConvDims d;
  d.n = g.n;
  d.c = g.c;
  d.h = g.h;
  d.w = g.w;
  d.oc = g.oc;
  d.oh = g.oh;
  d.ow = g.ow;
  d.kh = static_cast<int>(g.kh);
  d.kw = static_cast<int>(g.kw);
  d.sh = static_cast<int>(g.sh);
  d.sw = static_cast<int>(g.sw);
  d.ph = static_cast<int>(g.ph);
  d.pw = static_cast<int>(g.pw);
  d.dh = static_cast<int>(g.dh);
  d.dw = static_cast<int>(g.dw);
  d.groups = static_cast<int>(g.groups);
  d.cg = static_cast<int>(cg);
  d.ocg = static_cast<int>(ocg);
  d.taps = d.kh * d.kw;
  d.k = d.cg * d.taps;
  return d;
}

dim3 tile_grid(int64_t cols, int64_t rows, int64_t zs, const char* op) {
  const int64_t bx = ceil_div(cols, kTile);
  if (bx > std::numeric_limits<int>::max()) fail(Code::Shape, op, ": ", cols, " output columns are more than one launch covers");
  // y and z are walked by loops in the kernels when they exceed the hardware limit.
  return dim3(static_cast<unsigned>(std::max<int64_t>(bx, 1)),
              static_cast<unsigned>(std::clamp<int64_t>(ceil_div(rows, kTile), 1, kMaxGridYZ)),
              static_cast<unsigned>(std::clamp<int64_t>(zs, 1, kMaxGridYZ)));
}

void conv2d_forward_cuda(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y, const Conv2dGeom& g) {
  const char* op = "conv2d";
  const ConvDims d = dims_of(g, x.dtype, op);
  expect(x, {g.n, g.c, g.h, g.w}, x.dtype, op, "input");
  expect(w, {g.oc, d.cg, g.kh, g.kw}, x.dtype, op, "weight");
  if (bias) expect(*bias, {g.oc}, x.dtype, op, "bias");
  expect(y, {g.n, g.oc, g.oh, g.ow}, x.dtype, op, "output");
  if (y.numel() == 0) return;
  const dim3 grid = tile_grid(g.n * g.oh * g.ow, d.ocg, d.groups, op);
  cudaStream_t s = current_stream();
  if (x.dtype == DType::f64) FLOCK_LAUNCH(grid, kConvThreads, 0, s, conv2d_forward_kernel<double>)
  (x.data<double>(), w.data<double>(), bias ? bias->data<double>() : nullptr, y.data<double>(), d);
  else FLOCK_LAUNCH(grid, kConvThreads, 0, s, conv2d_forward_kernel<float>)(
      x.data<float>(), w.data<float>(), bias ? bias->data<float>() : nullptr, y.data<float>(), d);
  check_launch("conv2d_forward_kernel");
}

void conv2d_backward_input_cuda(const Tensor& gy, const Tensor& w, Tensor& gx, const Conv2dGeom& g) {
  const char* op = "conv2dBackwardInput";
  const ConvDims d = dims_of(g, gy.dtype, op);
  expect(gy, {g.n, g.oc, g.oh, g.ow}, gy.dtype, op, "grad");
  expect(w, {g.oc, d.cg, g.kh, g.kw}, gy.dtype, op, "weight");
  expect(gx, {g.n, g.c, g.h, g.w}, gy.dtype, op, "input grad");
  if (gx.numel() == 0) return;
  const dim3 grid = tile_grid(g.n * g.h * g.w, d.cg, d.groups, op);
  cudaStream_t s = current_stream();
  if (gy.dtype == DType::f64) FLOCK_LAUNCH(grid, kConvThreads, 0, s, conv2d_backward_input_kernel<double>)
  (gy.data<double>(), w.data<double>(), gx.data<double>(), d);
  else FLOCK_LAUNCH(grid, kConvThreads, 0, s, conv2d_backward_input_kernel<float>)(gy.data<float>(), w.data<float>(),
                                                                                   gx.data<float>(), d);
  check_launch("conv2d_backward_input_kernel");
}

template <class T>
void backward_weight_typed(const Tensor& x, const Tensor& gy, Tensor& gw, const ConvDims& d, cudaStream_t s) {
  const int64_t total = d.n * d.oh * d.ow, wsize = gw.numel();
  const int64_t tiles = ceil_div(d.k, kTile) * ceil_div(d.ocg, kTile) * d.groups;
  // Split the long reduction until the grid has a few waves of blocks, keeping each slice at
  // least 256 columns deep so a partial tile is worth its round trip through memory.
  constexpr int64_t kTargetBlocks = 512, kMinSlice = 256;
  int64_t splits = std::clamp<int64_t>(kTargetBlocks / std::max<int64_t>(tiles, 1), 1, std::max<int64_t>(1, total / kMinSlice));
  int64_t chunk = ceil_div(ceil_div(std::max<int64_t>(total, 1), splits), kDepth) * kDepth;
  splits = std::max<int64_t>(1, ceil_div(total, chunk));
  Tensor parts;
  T* out = gw.data<T>();
  if (splits > 1) {
    parts = empty({splits, wsize}, gw.dtype, gw.device(), "conv2dBackwardWeight");
    out = parts.data<T>();
  }
  const dim3 grid = tile_grid(d.k, d.ocg, d.groups * splits, "conv2dBackwardWeight");
  FLOCK_LAUNCH(grid, kConvThreads, 0, s, conv2d_backward_weight_kernel<T>)
  (x.data<T>(), gy.data<T>(), out, d, static_cast<int>(splits), chunk, wsize);
  check_launch("conv2d_backward_weight_kernel");
  if (splits > 1) {
    FLOCK_LAUNCH(grid_for(wsize), kThreads, 0, s, sum_slices_kernel<T>)
    (parts.data<T>(), gw.data<T>(), wsize, static_cast<int>(splits));
    check_launch("sum_slices_kernel");
  }
  // `parts` is freed on this stream after the kernels that read it.
}

void conv2d_backward_weight_cuda(const Tensor& x, const Tensor& gy, Tensor& gw, const Conv2dGeom& g) {
  const char* op = "conv2dBackwardWeight";
  const ConvDims d = dims_of(g, x.dtype, op);
  expect(x, {g.n, g.c, g.h, g.w}, x.dtype, op, "input");
  expect(gy, {g.n, g.oc, g.oh, g.ow}, x.dtype, op, "grad");
  expect(gw, {g.oc, d.cg, g.kh, g.kw}, x.dtype, op, "weight grad");
  if (gw.numel() == 0) return;
  cudaStream_t s = current_stream();
  if (x.dtype == DType::f64)
    backward_weight_typed<double>(x, gy, gw, d, s);
  else
    backward_weight_typed<float>(x, gy, gw, d, s);
}

}  // namespace

FLOCK_REGISTER_KERNEL(conv2d_forward, CUDA, conv2d_forward_cuda);
FLOCK_REGISTER_KERNEL(conv2d_backward_input, CUDA, conv2d_backward_input_cuda);
FLOCK_REGISTER_KERNEL(conv2d_backward_weight, CUDA, conv2d_backward_weight_cuda);

}  // namespace flock::cuda
