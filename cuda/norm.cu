// CUDA row normalisation of a [rows, d] view (layer and group norm without the affine part): each
// row to zero mean and unit biased variance, mean and 1/std saved for backward. A row goes to a
// warp (or a block for long rows) and its statistics are two-pass sums in double for f32 too, as
// on the CPU: group-norm rows run to many thousands of elements, and the kernel is bound by memory,
// not by the arithmetic, so the wider accumulator costs nothing measurable on a data-centre GPU.
#include <cmath>
#include <cstdint>
#include "common.cuh"
#include "nn_kernels.h"
#include "row_team.cuh"

namespace flock::cuda {
namespace {

template <class T, bool kWarp>
__global__ void row_norm_forward_kernel(const T* __restrict__ x, T* __restrict__ y, T* __restrict__ mean, T* __restrict__ rstd,
                                        int64_t rows, int64_t d, double eps) {
  using Team = RowTeam<kWarp>;
  const auto add = [](double a, double b) { return a + b; };
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
    for (int64_t i = Team::rank(); i < d; i += Team::size()) yr[i] = static_cast<T>((static_cast<double>(xr[i]) - m) * rs);
  }
}

// gx = rstd · (gy − mean(gy) − x̂ · mean(gy · x̂)), x̂ = (x − mean) · rstd, from the saved statistics.
template <class T, bool kWarp>
__global__ void row_norm_backward_kernel(const T* __restrict__ x, const T* __restrict__ mean, const T* __restrict__ rstd,
                                         const T* __restrict__ gy, T* __restrict__ gx, int64_t rows, int64_t d) {
  using Team = RowTeam<kWarp>;
  const auto add = [](double a, double b) { return a + b; };
  for (int64_t r = Team::first_row(); r < rows; r += Team::row_stride()) {
    const T* xr = x + r * d;
    const T* gr = gy + r * d;
    const double m = static_cast<double>(mean[r]), rs = static_cast<double>(rstd[r]);
    double sg = 0, sgx = 0;
    for (int64_t i = Team::rank(); i < d; i += Team::size()) {
      const double g = static_cast<double>(gr[i]);
      sg += g;
      sgx += g * (static_cast<double>(xr[i]) - m) * rs;
    }
    sg = Team::all_reduce(sg, add) / static_cast<double>(d);
    sgx = Team::all_reduce(sgx, add) / static_cast<double>(d);
    T* out = gx + r * d;
    for (int64_t i = Team::rank(); i < d; i += Team::size())
      out[i] = static_cast<T>(rs * (static_cast<double>(gr[i]) - sg - (static_cast<double>(xr[i]) - m) * rs * sgx));
  }
}

void expect(const Tensor& t, const Shape& shape, DType dtype, const char* op, const char* name) {
  if (t.device().type != DeviceType::CUDA) fail(Code::Device, op, ": ", name, " is on ", t.device().str(), ", expected a CUDA device");
  if (t.dtype != dtype) fail(Code::DType, op, ": ", name, " is ", dtype_name(t.dtype), ", expected ", dtype_name(dtype));
  if (t.shape != shape) fail(Code::Shape, op, ": ", name, " has shape ", shape_str(t.shape), ", expected ", shape_str(shape));
}

void check_input(const Tensor& x, const char* op) {
  if (x.dtype != DType::f32 && x.dtype != DType::f64) fail(Code::DType, op, ": input must be f32 or f64, got ", dtype_name(x.dtype));
  if (x.dim() != 2) fail(Code::Shape, op, ": input must be [rows, d], got ", shape_str(x.shape));
}

void row_norm_forward_cuda(const Tensor& x, Tensor& y, Tensor& mean, Tensor& rstd, double eps) {
  const char* op = "rowNorm";
  check_input(x, op);
  const int64_t rows = x.shape[0], d = x.shape[1];
  expect(x, x.shape, x.dtype, op, "input");
  expect(y, x.shape, x.dtype, op, "output");
  expect(mean, {rows}, x.dtype, op, "mean");
  expect(rstd, {rows}, x.dtype, op, "rstd");
  if (!(eps >= 0)) fail(Code::Arg, op, ": eps must be ≥ 0, got ", eps);
  if (rows == 0 || d == 0) return;
  const RowLaunch l = row_launch(rows, d);
  cudaStream_t s = current_stream();
  auto run = [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (l.warp)
      row_norm_forward_kernel<T, true><<<l.blocks, l.threads, 0, s>>>(x.data<T>(), y.data<T>(), mean.data<T>(), rstd.data<T>(), rows, d, eps);
    else
      row_norm_forward_kernel<T, false><<<l.blocks, l.threads, 0, s>>>(x.data<T>(), y.data<T>(), mean.data<T>(), rstd.data<T>(), rows, d, eps);
  };
  if (x.dtype == DType::f64) run(type_tag<double>{});
  else run(type_tag<float>{});
  check_launch("row_norm_forward_kernel");
}

void row_norm_backward_cuda(const Tensor& x, const Tensor& mean, const Tensor& rstd, const Tensor& gy, Tensor& gx) {
  const char* op = "rowNormBackward";
  check_input(x, op);
  const int64_t rows = x.shape[0], d = x.shape[1];
  expect(x, x.shape, x.dtype, op, "input");
  expect(mean, {rows}, x.dtype, op, "mean");
  expect(rstd, {rows}, x.dtype, op, "rstd");
  expect(gy, x.shape, x.dtype, op, "grad");
  expect(gx, x.shape, x.dtype, op, "input grad");
  if (rows == 0 || d == 0) return;
  const RowLaunch l = row_launch(rows, d);
  cudaStream_t s = current_stream();
  auto run = [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (l.warp)
      row_norm_backward_kernel<T, true><<<l.blocks, l.threads, 0, s>>>(x.data<T>(), mean.data<T>(), rstd.data<T>(), gy.data<T>(), gx.data<T>(), rows, d);
    else
      row_norm_backward_kernel<T, false><<<l.blocks, l.threads, 0, s>>>(x.data<T>(), mean.data<T>(), rstd.data<T>(), gy.data<T>(), gx.data<T>(), rows, d);
  };
  if (x.dtype == DType::f64) run(type_tag<double>{});
  else run(type_tag<float>{});
  check_launch("row_norm_backward_kernel");
}

}  // namespace

FLOCK_REGISTER_KERNEL(row_norm_forward, CUDA, row_norm_forward_cuda);
FLOCK_REGISTER_KERNEL(row_norm_backward, CUDA, row_norm_backward_cuda);

}  // namespace flock::cuda
