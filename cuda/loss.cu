// CUDA fused cross-entropy: log-softmax and the negative log-likelihood of each row in one pass,
// never storing the [rows, classes] log-probabilities. With label smoothing ε the target is
// (1−ε)·onehot + ε/C, so loss = lse − (1−ε)·x_t − ε·mean(x), as on the CPU. Forward gives a row to a
// warp (or a block for long rows) and keeps the row's logsumexp for backward; backward is
// element-wise, gx = g·(softmax − ε/C) − g·(1−ε) at the target. A target out of range is not
// thrown from the kernel: it is recorded in the stream's fault slot and rejects the next sync.
#include <cmath>
#include <cstdint>
#include "common.cuh"
#include "nn_kernels.h"
#include "row_team.cuh"

namespace flock::cuda {
namespace {

__device__ __forceinline__ int64_t target_at(const void* target, bool wide, int64_t r) {
  return wide ? static_cast<const int64_t*>(target)[r] : static_cast<const int32_t*>(target)[r];
}

// std::max as the CPU writes it, so a NaN logit is skipped by the max exactly as there.
template <class T>
__device__ __forceinline__ T cpu_max(T a, T b) {
  return a < b ? b : a;
}

template <class T, bool kWarp>
__global__ void cross_entropy_forward_kernel(const T* __restrict__ x, const void* __restrict__ target, bool wide,
                                             T* __restrict__ loss, T* __restrict__ lse, int64_t rows, int64_t cls, int64_t ignore,
                                             T keep, T eps, IndexFault* fault) {
  using Team = RowTeam<kWarp>;
  for (int64_t r = Team::first_row(); r < rows; r += Team::row_stride()) {
    const T* row = x + r * cls;
    T mx = -INFINITY;
    for (int64_t c = Team::rank(); c < cls; c += Team::size()) mx = cpu_max(mx, row[c]);
    mx = Team::all_reduce(mx, [](T a, T b) { return cpu_max(a, b); });
    T sum = 0, total = 0;
    for (int64_t c = Team::rank(); c < cls; c += Team::size()) {
      const T v = row[c];
      sum += exp(v - mx);
      total += v;
    }
    sum = Team::all_reduce(sum, [](T a, T b) { return a + b; });
    total = Team::all_reduce(total, [](T a, T b) { return a + b; });
    if (Team::rank() == 0) {
      const T l = mx + log(sum);
      lse[r] = l;
      const int64_t t = target_at(target, wide, r);
      if (t == ignore) {
        loss[r] = 0;
      } else if (t < 0 || t >= cls) {
        if (atomicCAS(&fault->flag, 0, 1) == 0) {
          fault->op = kCrossEntropy;
          fault->value = t;
          fault->limit = cls;
        }
        loss[r] = NAN;
      } else {
        loss[r] = l - keep * row[t] - eps * total / T(cls);
      }
    }
  }
}

template <class T>
__global__ void cross_entropy_backward_kernel(const T* __restrict__ x, const void* __restrict__ target, bool wide,
                                              const T* __restrict__ lse, const T* __restrict__ g, T* __restrict__ gx,
                                              int64_t rows, int64_t cls, int64_t ignore, T keep, T smooth) {
  FLOCK_GRID_STRIDE(i, rows * cls) {
    const int64_t r = i / cls, c = i % cls;
    const int64_t t = target_at(target, wide, r);
    if (t == ignore) {
      gx[i] = 0;
      continue;
    }
    const T gr = g[r];
    T v = gr * (exp(x[i] - lse[r]) - smooth);
    if (c == t) v -= gr * keep;
    gx[i] = v;
  }
}

void expect(const Tensor& t, const Shape& shape, DType dtype, const char* op, const char* name) {
  if (t.device().type != DeviceType::CUDA)
    fail(Code::Device, op, ": ", name, " is on ", t.device().str(), ", expected a CUDA device");
  if (t.dtype != dtype) fail(Code::DType, op, ": ", name, " is ", dtype_name(t.dtype), ", expected ", dtype_name(dtype));
  if (t.shape != shape) fail(Code::Shape, op, ": ", name, " has shape ", shape_str(t.shape), ", expected ", shape_str(shape));
}

// Checks the logits and targets; returns whether the targets are i64.
bool check_inputs(const Tensor& logits, const Tensor& target, const char* op) {
  if (logits.dtype != DType::f32 && logits.dtype != DType::f64)
    fail(Code::DType, op, ": input must be f32 or f64, got ", dtype_name(logits.dtype));
  if (logits.dim() != 2) fail(Code::Shape, op, ": input must be [rows, classes], got ", shape_str(logits.shape));
  if (logits.device().type != DeviceType::CUDA)
    fail(Code::Device, op, ": input is on ", logits.device().str(), ", expected a CUDA device");
  if (target.dtype != DType::i64 && target.dtype != DType::i32)
    fail(Code::DType, op, ": target must be i64 or i32, got ", dtype_name(target.dtype));
  expect(target, {logits.shape[0]}, target.dtype, op, "target");
  return target.dtype == DType::i64;
}

void cross_entropy_forward_cuda(const Tensor& logits, const Tensor& target, Tensor& loss, Tensor& lse, int64_t ignore,
                                double smoothing) {
  const char* op = "crossEntropy";
  const bool wide = check_inputs(logits, target, op);
  const int64_t rows = logits.shape[0], cls = logits.shape[1];
  expect(loss, {rows}, logits.dtype, op, "loss");
  expect(lse, {rows}, logits.dtype, op, "lse");
  if (rows == 0) return;
  if (cls == 0) fail(Code::Shape, op, ": input has no classes");
  const RowLaunch l = row_launch(rows, cls);
  cudaStream_t s = current_stream();
  IndexFault* fault = current_index_fault();
  auto run = [&](auto tag) {
    using T = typename decltype(tag)::type;
    // (1 − ε) is rounded from double, as the CPU's T(1 - eps).
    const T keep = static_cast<T>(1 - smoothing), eps = static_cast<T>(smoothing);
    if (l.warp) FLOCK_LAUNCH(l.blocks, l.threads, 0, s, cross_entropy_forward_kernel<T, true>)
    (logits.data<T>(), target.raw(), wide, loss.data<T>(), lse.data<T>(), rows, cls, ignore, keep, eps, fault);
    else FLOCK_LAUNCH(l.blocks, l.threads, 0, s, cross_entropy_forward_kernel<T, false>)(
        logits.data<T>(), target.raw(), wide, loss.data<T>(), lse.data<T>(), rows, cls, ignore, keep, eps, fault);
  };
  if (logits.dtype == DType::f64)
    run(type_tag<double>{});
  else
    run(type_tag<float>{});
  check_launch("cross_entropy_forward_kernel");
}

void cross_entropy_backward_cuda(const Tensor& logits, const Tensor& target, const Tensor& lse, const Tensor& gloss,
                                 Tensor& glogits, int64_t ignore, double smoothing) {
  const char* op = "crossEntropyBackward";
  const bool wide = check_inputs(logits, target, op);
  const int64_t rows = logits.shape[0], cls = logits.shape[1];
  expect(lse, {rows}, logits.dtype, op, "lse");
  expect(gloss, {rows}, logits.dtype, op, "grad");
  expect(glogits, logits.shape, logits.dtype, op, "input grad");
  const int64_t n = glogits.numel();
  if (n == 0) return;
  cudaStream_t s = current_stream();
  auto run = [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T keep = static_cast<T>(1 - smoothing), smooth = static_cast<T>(smoothing) / static_cast<T>(cls);
    FLOCK_LAUNCH(grid_for(n), kThreads, 0, s, cross_entropy_backward_kernel<T>)
    (logits.data<T>(), target.raw(), wide, lse.data<T>(), gloss.data<T>(), glogits.data<T>(), rows, cls, ignore, keep, smooth);
  };
  if (logits.dtype == DType::f64)
    run(type_tag<double>{});
  else
    run(type_tag<float>{});
  check_launch("cross_entropy_backward_kernel");
}

}  // namespace

FLOCK_REGISTER_KERNEL(cross_entropy_forward, CUDA, cross_entropy_forward_cuda);
FLOCK_REGISTER_KERNEL(cross_entropy_backward, CUDA, cross_entropy_backward_cuda);

}  // namespace flock::cuda
