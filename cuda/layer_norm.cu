// CUDA layer normalisation of a [rows, d] view with its elementwise affine fused in: each row to
// zero mean and unit biased variance, then y = x̂·w + b (w, b [d], each optional); mean and 1/std
// saved for backward. A row goes to a warp (or a block for long rows) and its statistics are
// two-pass sums in double for f32 too, as on the CPU: group-norm rows run to many thousands of
// elements, and the kernel is bound by memory, not by the arithmetic.
//
// Backward: one kernel computes dx row by row (as forward); dweight and dbias are column sums
// over the rows, done as block partials and a second pass: each block sums its column slice over
// a fixed chunk of rows into an f64 scratch row (threads of a warp take adjacent columns, so the
// reads coalesce), and a second kernel adds the chunks in order — deterministic, no atomics.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include "common.cuh"
#include "nn_kernels.h"
#include "row_team.cuh"

namespace flock::cuda {
namespace {

template <class T, bool kWarp>
__global__ void layer_norm_forward_kernel(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ b,
                                          T* __restrict__ y, T* __restrict__ mean, T* __restrict__ rstd, int64_t rows, int64_t d,
                                          double eps) {
  using Team = RowTeam<kWarp>;
  const auto add = [](double p, double q) { return p + q; };
  for (int64_t r = Team::first_row(); r < rows; r += Team::row_stride()) {
    const T* xr = x + r * d;
    double s = 0;
    for (int64_t i = Team::rank(); i < d; i += Team::size()) s += static_cast<double>(xr[i]);
    const double m = Team::all_reduce(s, add) / static_cast<double>(d);
    double ss = 0;
    for (int64_t i = Team::rank(); i < d; i += Team::size()) {
      const double c = static_cast<double>(xr[i]) - m;
      ss += c * c;
    }
    const double rs = 1 / sqrt(Team::all_reduce(ss, add) / static_cast<double>(d) + eps);
    if (Team::rank() == 0) {
      mean[r] = static_cast<T>(m);
      rstd[r] = static_cast<T>(rs);
    }
    T* yr = y + r * d;
    for (int64_t i = Team::rank(); i < d; i += Team::size()) {
      double v = (static_cast<double>(xr[i]) - m) * rs;
      if (w) v *= static_cast<double>(w[i]);
      if (b) v += static_cast<double>(b[i]);
      yr[i] = static_cast<T>(v);
    }
  }
}

// dx = rstd · (g − mean(g) − x̂ · mean(g · x̂)), g = gy·w (gy without a weight), x̂ = (x − mean)·rstd.
template <class T, bool kWarp>
__global__ void layer_norm_backward_kernel(const T* __restrict__ x, const T* __restrict__ mean, const T* __restrict__ rstd,
                                           const T* __restrict__ w, const T* __restrict__ gy, T* __restrict__ gx, int64_t rows,
                                           int64_t d) {
  using Team = RowTeam<kWarp>;
  const auto add = [](double p, double q) { return p + q; };
  for (int64_t r = Team::first_row(); r < rows; r += Team::row_stride()) {
    const T* xr = x + r * d;
    const T* gr = gy + r * d;
    const double m = static_cast<double>(mean[r]), rs = static_cast<double>(rstd[r]);
    double sg = 0, sgx = 0;
    for (int64_t i = Team::rank(); i < d; i += Team::size()) {
      const double g = w ? static_cast<double>(gr[i]) * static_cast<double>(w[i]) : static_cast<double>(gr[i]);
      sg += g;
      sgx += g * (static_cast<double>(xr[i]) - m) * rs;
    }
    sg = Team::all_reduce(sg, add) / static_cast<double>(d);
    sgx = Team::all_reduce(sgx, add) / static_cast<double>(d);
    T* out = gx + r * d;
    for (int64_t i = Team::rank(); i < d; i += Team::size()) {
      const double g = w ? static_cast<double>(gr[i]) * static_cast<double>(w[i]) : static_cast<double>(gr[i]);
      out[i] = static_cast<T>(rs * (g - sg - (static_cast<double>(xr[i]) - m) * rs * sgx));
    }
  }
}

// Block (column slice, row chunk): part[chunk][j] = Σ gy·x̂ and part[chunk][d + j] = Σ gy over the chunk.
template <class T>
__global__ void layer_norm_param_partials(const T* __restrict__ x, const T* __restrict__ mean, const T* __restrict__ rstd,
                                          const T* __restrict__ gy, double* __restrict__ part, int64_t rows, int64_t d,
                                          int64_t per_chunk) {
  const int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= d) return;
  const int64_t c = blockIdx.y, r0 = c * per_chunk, r1 = min(rows, r0 + per_chunk);
  double sw = 0, sb = 0;
  for (int64_t r = r0; r < r1; ++r) {
    const double g = static_cast<double>(gy[r * d + j]);
    sw += g * (static_cast<double>(x[r * d + j]) - static_cast<double>(mean[r])) * static_cast<double>(rstd[r]);
    sb += g;
  }
  part[c * 2 * d + j] = sw;
  part[c * 2 * d + d + j] = sb;
}

template <class T>
__global__ void layer_norm_param_sum(const double* __restrict__ part, T* __restrict__ gw, T* __restrict__ gb, int64_t chunks,
                                     int64_t d) {
  FLOCK_GRID_STRIDE(j, d) {
    double sw = 0, sb = 0;
    for (int64_t c = 0; c < chunks; ++c) {
      sw += part[c * 2 * d + j];
      sb += part[c * 2 * d + d + j];
    }
    if (gw) gw[j] = static_cast<T>(sw);
    if (gb) gb[j] = static_cast<T>(sb);
  }
}

void expect(const Tensor& t, const Shape& shape, DType dtype, const char* op, const char* name) {
  if (t.device().type != DeviceType::CUDA)
    fail(Code::Device, op, ": ", name, " is on ", t.device().str(), ", expected a CUDA device");
  if (t.dtype != dtype) fail(Code::DType, op, ": ", name, " is ", dtype_name(t.dtype), ", expected ", dtype_name(dtype));
  if (t.shape != shape) fail(Code::Shape, op, ": ", name, " has shape ", shape_str(t.shape), ", expected ", shape_str(shape));
}

void check_input(const Tensor& x, const char* op) {
  if (x.dtype != DType::f32 && x.dtype != DType::f64)
    fail(Code::DType, op, ": input must be f32 or f64, got ", dtype_name(x.dtype));
  if (x.dim() != 2) fail(Code::Shape, op, ": input must be [rows, d], got ", shape_str(x.shape));
}

template <class T>
const T* maybe(const Tensor* t) {
  return t ? t->data<T>() : nullptr;
}
template <class T>
T* maybe(Tensor* t) {
  return t ? t->data<T>() : nullptr;
}

void layer_norm_forward_cuda(const Tensor& x, const Tensor* w, const Tensor* b, Tensor& y, Tensor& mean, Tensor& rstd,
                             double eps) {
  const char* op = "layerNorm";
  check_input(x, op);
  const int64_t rows = x.shape[0], d = x.shape[1];
  expect(x, x.shape, x.dtype, op, "input");
  if (w) expect(*w, {d}, x.dtype, op, "weight");
  if (b) expect(*b, {d}, x.dtype, op, "bias");
  expect(y, x.shape, x.dtype, op, "output");
  expect(mean, {rows}, x.dtype, op, "mean");
  expect(rstd, {rows}, x.dtype, op, "rstd");
  if (!(eps >= 0)) fail(Code::Arg, op, ": eps must be ≥ 0, got ", eps);
  if (rows == 0 || d == 0) return;
  const RowLaunch l = row_launch(rows, d);
  cudaStream_t s = current_stream();
  auto run = [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (l.warp) FLOCK_LAUNCH(l.blocks, l.threads, 0, s, layer_norm_forward_kernel<T, true>)
    (x.data<T>(), maybe<T>(w), maybe<T>(b), y.data<T>(), mean.data<T>(), rstd.data<T>(), rows, d, eps);
    else FLOCK_LAUNCH(l.blocks, l.threads, 0, s, layer_norm_forward_kernel<T, false>)(
        x.data<T>(), maybe<T>(w), maybe<T>(b), y.data<T>(), mean.data<T>(), rstd.data<T>(), rows, d, eps);
  };
  if (x.dtype == DType::f64)
    run(type_tag<double>{});
  else
    run(type_tag<float>{});
  check_launch("layer_norm_forward_kernel");
}

void layer_norm_backward_cuda(const Tensor& x, const Tensor& mean, const Tensor& rstd, const Tensor* w, const Tensor& gy,
                              Tensor& gx, Tensor* gw, Tensor* gb) {
  const char* op = "layerNormBackward";
  check_input(x, op);
  const int64_t rows = x.shape[0], d = x.shape[1];
  expect(x, x.shape, x.dtype, op, "input");
  expect(mean, {rows}, x.dtype, op, "mean");
  expect(rstd, {rows}, x.dtype, op, "rstd");
  if (w) expect(*w, {d}, x.dtype, op, "weight");
  expect(gy, x.shape, x.dtype, op, "grad");
  expect(gx, x.shape, x.dtype, op, "input grad");
  if (gw) expect(*gw, {d}, x.dtype, op, "weight grad");
  if (gb) expect(*gb, {d}, x.dtype, op, "bias grad");
  if (rows == 0 || d == 0) return;
  const RowLaunch l = row_launch(rows, d);
  cudaStream_t s = current_stream();
  // Chunks of at least 32 rows, and at most 1024 of them (gridDim.y ≤ 65535 in any case).
  const int64_t per_chunk = std::max<int64_t>(32, ceil_div(rows, 1024));
  const int64_t chunks = ceil_div(rows, per_chunk);
  Tensor part;
  if (gw || gb) part = empty({chunks, 2 * d}, DType::f64, x.device(), op);
  auto run = [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (l.warp) FLOCK_LAUNCH(l.blocks, l.threads, 0, s, layer_norm_backward_kernel<T, true>)
    (x.data<T>(), mean.data<T>(), rstd.data<T>(), maybe<T>(w), gy.data<T>(), gx.data<T>(), rows, d);
    else FLOCK_LAUNCH(l.blocks, l.threads, 0, s, layer_norm_backward_kernel<T, false>)(
        x.data<T>(), mean.data<T>(), rstd.data<T>(), maybe<T>(w), gy.data<T>(), gx.data<T>(), rows, d);
    check_launch("layer_norm_backward_kernel");
    if (!gw && !gb) return;
    const int64_t slices = ceil_div(d, kThreads);
    if (slices > 0x7fffffff) fail(Code::Shape, op, ": rows of ", d, " elements are too long for one launch");
    const dim3 grid(static_cast<unsigned>(slices), static_cast<unsigned>(chunks));
    FLOCK_LAUNCH(grid, kThreads, 0, s, layer_norm_param_partials<T>)
    (x.data<T>(), mean.data<T>(), rstd.data<T>(), gy.data<T>(), part.data<double>(), rows, d, per_chunk);
    check_launch("layer_norm_param_partials");
    FLOCK_LAUNCH(grid_for(d), kThreads, 0, s, layer_norm_param_sum<T>)
    (part.data<double>(), maybe<T>(gw), maybe<T>(gb), chunks, d);
    check_launch("layer_norm_param_sum");
  };
  if (x.dtype == DType::f64)
    run(type_tag<double>{});
  else
    run(type_tag<float>{});
  // `part` is freed on this stream after the kernels that read it.
}

}  // namespace

FLOCK_REGISTER_KERNEL(layer_norm_forward, CUDA, layer_norm_forward_cuda);
FLOCK_REGISTER_KERNEL(layer_norm_backward, CUDA, layer_norm_backward_cuda);

}  // namespace flock::cuda
