// CUDA fused optimizer steps, in the formulas of cpp/cpu/optim.cc (torch.optim's Adam/AdamW with
// bias correction and amsgrad; SGD with momentum, dampening, Nesterov; RMSprop plain or centered,
// with momentum; Adagrad with lr decay; all with maximize): one launch covers up to kMaxTensors
// parameters (multi_tensor.cuh). bf16/f16 params go through their f32 master weights: one launch
// reads the low-precision grad, updates master and state in f32 and writes the rounded copy.
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>
#include "common.cuh"
#include "low_precision_round.h"
#include "multi_tensor.cuh"
#include "nn_kernels.h"
#include "philox.h"

namespace flock::cuda {
namespace {

constexpr int kOptimThreads = 256;

template <class T>
struct AdamScalars {
  T step_size, b1, b2, eps, wd, rbc2, decay, sign;  // sign: -1 for maximize
  bool decoupled, l2;                               // AdamW decays the weights; Adam with weight decay adds it to the gradient
  bool amsgrad;                                     // list 4 holds the running maximum of exp_avg_sq
};

// Lists: 0 params, 1 grads, 2 exp_avg, 3 exp_avg_sq, 4 max_exp_avg_sq (null without amsgrad).
// __grid_constant__ lets the kernel index the table in parameter space instead of copying it to
// local memory.
template <class T>
__global__ void __launch_bounds__(kOptimThreads)
    adam_step_kernel(const __grid_constant__ TensorBatch<T, 5> b, const AdamScalars<T> c) {
  int64_t begin, end;
  const int t = block_tensor(b, &begin, &end);
  T* __restrict__ p = b.ptr[0][t];
  const T* __restrict__ g = b.ptr[1][t];
  T* __restrict__ m = b.ptr[2][t];
  T* __restrict__ v = b.ptr[3][t];
  T* __restrict__ mv = b.ptr[4][t];
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    T gi = c.sign * g[i], pi = p[i];
    if (c.decoupled)
      pi *= c.decay;
    else if (c.l2)
      gi += c.wd * pi;
    const T mi = c.b1 * m[i] + (T(1) - c.b1) * gi;
    const T vi = c.b2 * v[i] + (T(1) - c.b2) * gi * gi;
    m[i] = mi;
    v[i] = vi;
    T vd = vi;
    if (c.amsgrad) {
      // torch.optim: the running maximum of the raw (not bias-corrected) second moments.
      vd = mv[i] > vi ? mv[i] : vi;
      mv[i] = vd;
    }
    p[i] = pi - c.step_size * mi / (sqrt(vd) * c.rbc2 + c.eps);
  }
}

template <class T>
struct SgdScalars {
  T lr, momentum, damp, wd, sign;  // sign: -1 for maximize
  bool has_buf, nesterov, first_step;
};

// Lists: 0 params, 1 grads, 2 momentum buffers (null without momentum).
template <class T>
__global__ void __launch_bounds__(kOptimThreads)
    sgd_step_kernel(const __grid_constant__ TensorBatch<T, 3> b, const SgdScalars<T> c) {
  int64_t begin, end;
  const int t = block_tensor(b, &begin, &end);
  T* __restrict__ p = b.ptr[0][t];
  const T* __restrict__ g = b.ptr[1][t];
  T* __restrict__ buf = b.ptr[2][t];
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    const T pi = p[i];
    T d = c.sign * g[i] + c.wd * pi;
    if (c.has_buf) {
      const T bi = c.first_step ? d : c.momentum * buf[i] + c.damp * d;
      buf[i] = bi;
      d = c.nesterov ? d + c.momentum * bi : bi;
    }
    p[i] = pi - c.lr * d;
  }
}

template <class T>
struct RmspropScalars {
  T lr, alpha, one_minus_alpha, eps, wd, momentum, sign;  // sign: -1 for maximize
  bool centered, has_buf;
};

// One element of RMSprop, shared by the plain and master kernels: updates the averages (and the
// momentum buffer) at i and returns the new parameter value.
template <class T>
__device__ __forceinline__ T rmsprop_update(T pi, T gi, T* sq, T* ga, T* buf, int64_t i, const RmspropScalars<T>& c) {
  gi = c.sign * gi + c.wd * pi;
  const T si = c.alpha * sq[i] + c.one_minus_alpha * gi * gi;
  sq[i] = si;
  T avg;
  if (c.centered) {
    const T ai = c.alpha * ga[i] + c.one_minus_alpha * gi;
    ga[i] = ai;
    avg = sqrt(si - ai * ai) + c.eps;
  } else {
    avg = sqrt(si) + c.eps;
  }
  if (c.has_buf) {
    const T bi = c.momentum * buf[i] + gi / avg;
    buf[i] = bi;
    return pi - c.lr * bi;
  }
  return pi - c.lr * (gi / avg);
}

// Lists: 0 params, 1 grads, 2 square_avg, 3 grad_avg (null unless centered), 4 momentum buffers (null without momentum).
template <class T>
__global__ void __launch_bounds__(kOptimThreads)
    rmsprop_step_kernel(const __grid_constant__ TensorBatch<T, 5> b, const RmspropScalars<T> c) {
  int64_t begin, end;
  const int t = block_tensor(b, &begin, &end);
  T* __restrict__ p = b.ptr[0][t];
  const T* __restrict__ g = b.ptr[1][t];
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x)
    p[i] = rmsprop_update<T>(p[i], g[i], b.ptr[2][t], b.ptr[3][t], b.ptr[4][t], i, c);
}

template <class T>
struct AdagradScalars {
  T clr, eps, wd, sign;  // clr: the step's decayed lr; sign: -1 for maximize
};

template <class T>
__device__ __forceinline__ T adagrad_update(T pi, T gi, T* sum, int64_t i, const AdagradScalars<T>& c) {
  gi = c.sign * gi + c.wd * pi;
  const T si = sum[i] + gi * gi;
  sum[i] = si;
  return pi - c.clr * (gi / (sqrt(si) + c.eps));
}

// Lists: 0 params, 1 grads, 2 sums.
template <class T>
__global__ void __launch_bounds__(kOptimThreads)
    adagrad_step_kernel(const __grid_constant__ TensorBatch<T, 3> b, const AdagradScalars<T> c) {
  int64_t begin, end;
  const int t = block_tensor(b, &begin, &end);
  T* __restrict__ p = b.ptr[0][t];
  const T* __restrict__ g = b.ptr[1][t];
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) p[i] = adagrad_update<T>(p[i], g[i], b.ptr[2][t], i, c);
}

// Rounds master value x to the copy's type: to nearest, or stochastically with Philox word `w`.
template <class L>
__device__ __forceinline__ L round_copy(float x, bool stochastic, uint64_t seed, uint64_t counter, int word) {
  const L nearest = Num<L>::store(x);
  if (!stochastic) return nearest;
  const Philox4 r = philox(seed, counter);
  L out;
  if constexpr (std::is_same_v<L, bf16>)
    out.bits = bf16_bits_stochastic(x, r.v[word], nearest.bits);
  else
    out.bits = f16_bits_stochastic(x, r.v[word], nearest.bits);
  return out;
}

struct CopyRound {
  bool stochastic;
  uint64_t seed, offset;
  int64_t base[kMaxTensors];  // each tensor's first element among the call's elements
};

// Lists (all read as float*, the low-precision ones reinterpreted): 0 the bf16/f16 params, 1 their
// grads, 2 exp_avg, 3 exp_avg_sq, 4 max_exp_avg_sq (null without amsgrad), 5 the f32 masters.
template <class L>
__global__ void __launch_bounds__(kOptimThreads)
    adam_master_kernel(const __grid_constant__ TensorBatch<float, 6> b, const AdamScalars<float> c,
                       const __grid_constant__ CopyRound r) {
  int64_t begin, end;
  const int t = block_tensor(b, &begin, &end);
  L* __restrict__ copy = reinterpret_cast<L*>(b.ptr[0][t]);
  const L* __restrict__ g = reinterpret_cast<const L*>(b.ptr[1][t]);
  float* __restrict__ m = b.ptr[2][t];
  float* __restrict__ v = b.ptr[3][t];
  float* __restrict__ mv = b.ptr[4][t];
  float* __restrict__ p = b.ptr[5][t];
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    float gi = c.sign * Num<L>::load(g[i]), pi = p[i];
    if (c.decoupled)
      pi *= c.decay;
    else if (c.l2)
      gi += c.wd * pi;
    const float mi = c.b1 * m[i] + (1.f - c.b1) * gi;
    const float vi = c.b2 * v[i] + (1.f - c.b2) * gi * gi;
    m[i] = mi;
    v[i] = vi;
    float vd = vi;
    if (c.amsgrad) {
      vd = mv[i] > vi ? mv[i] : vi;
      mv[i] = vd;
    }
    pi -= c.step_size * mi / (sqrtf(vd) * c.rbc2 + c.eps);
    p[i] = pi;
    const uint64_t j = static_cast<uint64_t>(r.base[t] + i);
    copy[i] = round_copy<L>(pi, r.stochastic, r.seed, r.offset + j / 4, static_cast<int>(j % 4));
  }
}

// Lists: 0 the bf16/f16 params, 1 their grads, 2 momentum buffers (null without momentum), 3 masters.
template <class L>
__global__ void __launch_bounds__(kOptimThreads)
    sgd_master_kernel(const __grid_constant__ TensorBatch<float, 4> b, const SgdScalars<float> c,
                      const __grid_constant__ CopyRound r) {
  int64_t begin, end;
  const int t = block_tensor(b, &begin, &end);
  L* __restrict__ copy = reinterpret_cast<L*>(b.ptr[0][t]);
  const L* __restrict__ g = reinterpret_cast<const L*>(b.ptr[1][t]);
  float* __restrict__ buf = b.ptr[2][t];
  float* __restrict__ p = b.ptr[3][t];
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    float pi = p[i];
    float d = c.sign * Num<L>::load(g[i]) + c.wd * pi;
    if (c.has_buf) {
      const float bi = c.first_step ? d : c.momentum * buf[i] + c.damp * d;
      buf[i] = bi;
      d = c.nesterov ? d + c.momentum * bi : bi;
    }
    pi -= c.lr * d;
    p[i] = pi;
    const uint64_t j = static_cast<uint64_t>(r.base[t] + i);
    copy[i] = round_copy<L>(pi, r.stochastic, r.seed, r.offset + j / 4, static_cast<int>(j % 4));
  }
}

// Lists: 0 the bf16/f16 params, 1 their grads, 2 square_avg, 3 grad_avg (null unless centered),
// 4 momentum buffers (null without momentum), 5 the f32 masters.
template <class L>
__global__ void __launch_bounds__(kOptimThreads)
    rmsprop_master_kernel(const __grid_constant__ TensorBatch<float, 6> b, const RmspropScalars<float> c,
                          const __grid_constant__ CopyRound r) {
  int64_t begin, end;
  const int t = block_tensor(b, &begin, &end);
  L* __restrict__ copy = reinterpret_cast<L*>(b.ptr[0][t]);
  const L* __restrict__ g = reinterpret_cast<const L*>(b.ptr[1][t]);
  float* __restrict__ p = b.ptr[5][t];
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    const float pi = rmsprop_update<float>(p[i], Num<L>::load(g[i]), b.ptr[2][t], b.ptr[3][t], b.ptr[4][t], i, c);
    p[i] = pi;
    const uint64_t j = static_cast<uint64_t>(r.base[t] + i);
    copy[i] = round_copy<L>(pi, r.stochastic, r.seed, r.offset + j / 4, static_cast<int>(j % 4));
  }
}

// Lists: 0 the bf16/f16 params, 1 their grads, 2 sums, 3 the f32 masters.
template <class L>
__global__ void __launch_bounds__(kOptimThreads)
    adagrad_master_kernel(const __grid_constant__ TensorBatch<float, 4> b, const AdagradScalars<float> c,
                          const __grid_constant__ CopyRound r) {
  int64_t begin, end;
  const int t = block_tensor(b, &begin, &end);
  L* __restrict__ copy = reinterpret_cast<L*>(b.ptr[0][t]);
  const L* __restrict__ g = reinterpret_cast<const L*>(b.ptr[1][t]);
  float* __restrict__ p = b.ptr[3][t];
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    const float pi = adagrad_update<float>(p[i], Num<L>::load(g[i]), b.ptr[2][t], i, c);
    p[i] = pi;
    const uint64_t j = static_cast<uint64_t>(r.base[t] + i);
    copy[i] = round_copy<L>(pi, r.stochastic, r.seed, r.offset + j / 4, static_cast<int>(j % 4));
  }
}

// Each param's first element among all elements of the call, in call order (the Philox counters
// of stochastic rounding follow it, as on the CPU).
std::vector<int64_t> element_bases(const std::vector<Tensor>& params) {
  std::vector<int64_t> base(params.size());
  int64_t at = 0;
  for (size_t k = 0; k < params.size(); ++k) {
    base[k] = at;
    at += params[k].numel();
  }
  return base;
}

// for_each_batch over the params of dtype L, with each batch's element bases filled in.
template <class L, int kLists, class Launch>
void for_each_master_batch(const std::vector<const std::vector<Tensor>*>& lists, DType dtype, bool stochastic, uint64_t seed,
                           uint64_t offset, Launch launch) {
  const std::vector<Tensor>& params = *lists[0];
  const std::vector<int64_t> base = element_bases(params);
  size_t next = 0;  // the next param of this dtype, in the order for_each_batch packs them
  for_each_batch<float, kLists>(lists, dtype, [&](const TensorBatch<float, kLists>& b, int64_t blocks) {
    CopyRound r{stochastic, seed, offset, {}};
    for (int t = 0; t < b.count; ++t) {
      while (params[next].dtype != dtype || params[next].numel() == 0) ++next;
      r.base[t] = base[next++];
    }
    launch(b, blocks, r);
  });
}

// `state`: the list is f32 for bf16/f16 params (master weights and optimizer state), else the param's dtype.
void check_list(const std::vector<Tensor>& params, const std::vector<Tensor>& list, const char* op, const char* name,
                bool state = true) {
  if (list.size() != params.size()) fail(Code::Arg, op, ": ", list.size(), " ", name, " for ", params.size(), " params");
  for (size_t k = 0; k < params.size(); ++k) {
    const Tensor& p = params[k];
    const Tensor& t = list[k];
    const bool low = p.dtype == DType::bf16 || p.dtype == DType::f16;
    if (t.device() != p.device() || t.dtype != (state && low ? DType::f32 : p.dtype) || t.shape != p.shape)
      fail(Code::Shape, op, ": ", name, " tensor ", k, " ", shape_str(t.shape), " ", dtype_name(t.dtype), " on ",
           t.device().str(), " does not match param ", shape_str(p.shape), " ", dtype_name(p.dtype), " on ", p.device().str());
  }
}

void check_params(const std::vector<Tensor>& params, const char* op) {
  for (size_t k = 0; k < params.size(); ++k) {
    const Tensor& p = params[k];
    if (p.device().type != DeviceType::CUDA || p.device() != params[0].device())
      fail(Code::Device, op, ": param ", k, " is on ", p.device().str(), ", expected ", params[0].device().str());
    if (!is_floating(p.dtype)) fail(Code::DType, op, ": param ", k, " must be floating, got ", dtype_name(p.dtype));
    // Checked before anything launches, so a refused step leaves every param untouched.
    if (ceil_div(p.numel(), kTensorChunk) > INT32_MAX)
      fail(Code::Shape, op, ": param ", k, " of ", p.numel(), " elements is larger than one launch covers");
  }
}

template <class T>
void adam_typed(const std::vector<const std::vector<Tensor>*>& lists, const AdamConfig& cfg, cudaStream_t s) {
  const double bc1 = 1 - std::pow(cfg.beta1, double(cfg.step)), bc2 = 1 - std::pow(cfg.beta2, double(cfg.step));
  AdamScalars<T> c;
  c.step_size = T(cfg.lr / bc1);
  c.b1 = T(cfg.beta1);
  c.b2 = T(cfg.beta2);
  c.eps = T(cfg.eps);
  c.wd = T(cfg.weight_decay);
  c.rbc2 = T(1 / std::sqrt(bc2));
  c.decay = T(1 - cfg.lr * cfg.weight_decay);
  c.sign = T(cfg.maximize ? -1 : 1);
  c.decoupled = cfg.decoupled;
  c.l2 = !cfg.decoupled && cfg.weight_decay != 0;
  c.amsgrad = cfg.amsgrad;
  const DType dtype = std::is_same_v<T, double> ? DType::f64 : DType::f32;
  for_each_batch<T, 5>(lists, dtype, [&](const TensorBatch<T, 5>& b, int64_t blocks) {
    FLOCK_LAUNCH(static_cast<unsigned>(blocks), kOptimThreads, 0, s, adam_step_kernel<T>)(b, c);
    check_launch("adam_step_kernel");
  });
}

template <class T>
void sgd_typed(const std::vector<const std::vector<Tensor>*>& lists, const SgdConfig& cfg, cudaStream_t s) {
  SgdScalars<T> c;
  c.lr = T(cfg.lr);
  c.momentum = T(cfg.momentum);
  c.damp = T(1 - cfg.dampening);
  c.wd = T(cfg.weight_decay);
  c.sign = T(cfg.maximize ? -1 : 1);
  c.has_buf = lists[2] != nullptr;
  c.nesterov = cfg.nesterov;
  c.first_step = cfg.first_step;
  const DType dtype = std::is_same_v<T, double> ? DType::f64 : DType::f32;
  for_each_batch<T, 3>(lists, dtype, [&](const TensorBatch<T, 3>& b, int64_t blocks) {
    FLOCK_LAUNCH(static_cast<unsigned>(blocks), kOptimThreads, 0, s, sgd_step_kernel<T>)(b, c);
    check_launch("sgd_step_kernel");
  });
}

template <class L>
void adam_master_typed(const std::vector<const std::vector<Tensor>*>& lists, DType dtype, const AdamConfig& cfg, cudaStream_t s) {
  const double bc1 = 1 - std::pow(cfg.beta1, double(cfg.step)), bc2 = 1 - std::pow(cfg.beta2, double(cfg.step));
  AdamScalars<float> c;
  c.step_size = float(cfg.lr / bc1);
  c.b1 = float(cfg.beta1);
  c.b2 = float(cfg.beta2);
  c.eps = float(cfg.eps);
  c.wd = float(cfg.weight_decay);
  c.rbc2 = float(1 / std::sqrt(bc2));
  c.decay = float(1 - cfg.lr * cfg.weight_decay);
  c.sign = cfg.maximize ? -1.f : 1.f;
  c.decoupled = cfg.decoupled;
  c.l2 = !cfg.decoupled && cfg.weight_decay != 0;
  c.amsgrad = cfg.amsgrad;
  for_each_master_batch<L, 6>(lists, dtype, cfg.stochastic_rounding, cfg.seed, cfg.offset,
                              [&](const TensorBatch<float, 6>& b, int64_t blocks, const CopyRound& r) {
                                FLOCK_LAUNCH(static_cast<unsigned>(blocks), kOptimThreads, 0, s, adam_master_kernel<L>)(b, c, r);
                                check_launch("adam_master_kernel");
                              });
}

template <class L>
void sgd_master_typed(const std::vector<const std::vector<Tensor>*>& lists, DType dtype, const SgdConfig& cfg, cudaStream_t s) {
  SgdScalars<float> c;
  c.lr = float(cfg.lr);
  c.momentum = float(cfg.momentum);
  c.damp = float(1 - cfg.dampening);
  c.wd = float(cfg.weight_decay);
  c.sign = cfg.maximize ? -1.f : 1.f;
  c.has_buf = lists[2] != nullptr;
  c.nesterov = cfg.nesterov;
  c.first_step = cfg.first_step;
  for_each_master_batch<L, 4>(lists, dtype, cfg.stochastic_rounding, cfg.seed, cfg.offset,
                              [&](const TensorBatch<float, 4>& b, int64_t blocks, const CopyRound& r) {
                                FLOCK_LAUNCH(static_cast<unsigned>(blocks), kOptimThreads, 0, s, sgd_master_kernel<L>)(b, c, r);
                                check_launch("sgd_master_kernel");
                              });
}

template <class T>
RmspropScalars<T> rmsprop_scalars(const RmspropConfig& cfg) {
  RmspropScalars<T> c;
  c.lr = T(cfg.lr);
  c.alpha = T(cfg.alpha);
  c.one_minus_alpha = T(1 - cfg.alpha);
  c.eps = T(cfg.eps);
  c.wd = T(cfg.weight_decay);
  c.momentum = T(cfg.momentum);
  c.sign = T(cfg.maximize ? -1 : 1);
  c.centered = cfg.centered;
  c.has_buf = cfg.momentum > 0;
  return c;
}

template <class T>
AdagradScalars<T> adagrad_scalars(const AdagradConfig& cfg) {
  AdagradScalars<T> c;
  c.clr = T(cfg.lr / (1 + double(cfg.step - 1) * cfg.lr_decay));
  c.eps = T(cfg.eps);
  c.wd = T(cfg.weight_decay);
  c.sign = T(cfg.maximize ? -1 : 1);
  return c;
}

template <class T>
void rmsprop_typed(const std::vector<const std::vector<Tensor>*>& lists, const RmspropConfig& cfg, cudaStream_t s) {
  const RmspropScalars<T> c = rmsprop_scalars<T>(cfg);
  const DType dtype = std::is_same_v<T, double> ? DType::f64 : DType::f32;
  for_each_batch<T, 5>(lists, dtype, [&](const TensorBatch<T, 5>& b, int64_t blocks) {
    FLOCK_LAUNCH(static_cast<unsigned>(blocks), kOptimThreads, 0, s, rmsprop_step_kernel<T>)(b, c);
    check_launch("rmsprop_step_kernel");
  });
}

template <class T>
void adagrad_typed(const std::vector<const std::vector<Tensor>*>& lists, const AdagradConfig& cfg, cudaStream_t s) {
  const AdagradScalars<T> c = adagrad_scalars<T>(cfg);
  const DType dtype = std::is_same_v<T, double> ? DType::f64 : DType::f32;
  for_each_batch<T, 3>(lists, dtype, [&](const TensorBatch<T, 3>& b, int64_t blocks) {
    FLOCK_LAUNCH(static_cast<unsigned>(blocks), kOptimThreads, 0, s, adagrad_step_kernel<T>)(b, c);
    check_launch("adagrad_step_kernel");
  });
}

template <class L>
void rmsprop_master_typed(const std::vector<const std::vector<Tensor>*>& lists, DType dtype, const RmspropConfig& cfg,
                          cudaStream_t s) {
  const RmspropScalars<float> c = rmsprop_scalars<float>(cfg);
  for_each_master_batch<L, 6>(lists, dtype, cfg.stochastic_rounding, cfg.seed, cfg.offset,
                              [&](const TensorBatch<float, 6>& b, int64_t blocks, const CopyRound& r) {
                                FLOCK_LAUNCH(static_cast<unsigned>(blocks), kOptimThreads, 0, s, rmsprop_master_kernel<L>)
                                (b, c, r);
                                check_launch("rmsprop_master_kernel");
                              });
}

template <class L>
void adagrad_master_typed(const std::vector<const std::vector<Tensor>*>& lists, DType dtype, const AdagradConfig& cfg,
                          cudaStream_t s) {
  const AdagradScalars<float> c = adagrad_scalars<float>(cfg);
  for_each_master_batch<L, 4>(lists, dtype, cfg.stochastic_rounding, cfg.seed, cfg.offset,
                              [&](const TensorBatch<float, 4>& b, int64_t blocks, const CopyRound& r) {
                                FLOCK_LAUNCH(static_cast<unsigned>(blocks), kOptimThreads, 0, s, adagrad_master_kernel<L>)
                                (b, c, r);
                                check_launch("adagrad_master_kernel");
                              });
}

void adam_step_cuda(std::vector<Tensor>& params, const std::vector<Tensor>& grads, std::vector<Tensor>& m, std::vector<Tensor>& v,
                    std::vector<Tensor>& max_v, std::vector<Tensor>& masters, const AdamConfig& cfg) {
  const char* op = "adamStep";
  check_params(params, op);
  check_list(params, grads, op, "grads", false);
  check_list(params, m, op, "exp_avg");
  check_list(params, v, op, "exp_avg_sq");
  if (cfg.amsgrad) check_list(params, max_v, op, "max_exp_avg_sq");
  if (params.empty()) return;
  if (cfg.step < 1) fail(Code::Arg, op, ": step must be ≥ 1, got ", cfg.step);
  cudaStream_t s = current_stream();
  const std::vector<const std::vector<Tensor>*> lists{&params, &grads, &m, &v, cfg.amsgrad ? &max_v : nullptr};
  if (!masters.empty()) {
    check_list(params, masters, op, "master weights");
    const std::vector<const std::vector<Tensor>*> ml{&params, &grads, &m, &v, cfg.amsgrad ? &max_v : nullptr, &masters};
    adam_master_typed<bf16>(ml, DType::bf16, cfg, s);
    adam_master_typed<f16>(ml, DType::f16, cfg, s);
  }
  adam_typed<float>(lists, cfg, s);
  adam_typed<double>(lists, cfg, s);
}

void sgd_step_cuda(std::vector<Tensor>& params, const std::vector<Tensor>& grads, std::vector<Tensor>& bufs,
                   std::vector<Tensor>& masters, const SgdConfig& cfg) {
  const char* op = "sgdStep";
  check_params(params, op);
  check_list(params, grads, op, "grads", false);
  if (!bufs.empty()) check_list(params, bufs, op, "momentum buffers");
  if (params.empty()) return;
  cudaStream_t s = current_stream();
  const std::vector<const std::vector<Tensor>*> lists{&params, &grads, bufs.empty() ? nullptr : &bufs};
  if (!masters.empty()) {
    check_list(params, masters, op, "master weights");
    const std::vector<const std::vector<Tensor>*> ml{&params, &grads, bufs.empty() ? nullptr : &bufs, &masters};
    sgd_master_typed<bf16>(ml, DType::bf16, cfg, s);
    sgd_master_typed<f16>(ml, DType::f16, cfg, s);
  }
  sgd_typed<float>(lists, cfg, s);
  sgd_typed<double>(lists, cfg, s);
}

void rmsprop_step_cuda(std::vector<Tensor>& params, const std::vector<Tensor>& grads, std::vector<Tensor>& square_avg,
                       std::vector<Tensor>& grad_avg, std::vector<Tensor>& bufs, std::vector<Tensor>& masters,
                       const RmspropConfig& cfg) {
  const char* op = "rmspropStep";
  check_params(params, op);
  check_list(params, grads, op, "grads", false);
  check_list(params, square_avg, op, "square_avg");
  if (cfg.centered) check_list(params, grad_avg, op, "grad_avg");
  if (cfg.momentum > 0) check_list(params, bufs, op, "momentum buffers");
  if (params.empty()) return;
  cudaStream_t s = current_stream();
  const std::vector<Tensor>* ga = cfg.centered ? &grad_avg : nullptr;
  const std::vector<Tensor>* buf = cfg.momentum > 0 ? &bufs : nullptr;
  if (!masters.empty()) {
    check_list(params, masters, op, "master weights");
    const std::vector<const std::vector<Tensor>*> ml{&params, &grads, &square_avg, ga, buf, &masters};
    rmsprop_master_typed<bf16>(ml, DType::bf16, cfg, s);
    rmsprop_master_typed<f16>(ml, DType::f16, cfg, s);
  }
  const std::vector<const std::vector<Tensor>*> lists{&params, &grads, &square_avg, ga, buf};
  rmsprop_typed<float>(lists, cfg, s);
  rmsprop_typed<double>(lists, cfg, s);
}

void adagrad_step_cuda(std::vector<Tensor>& params, const std::vector<Tensor>& grads, std::vector<Tensor>& sums,
                       std::vector<Tensor>& masters, const AdagradConfig& cfg) {
  const char* op = "adagradStep";
  check_params(params, op);
  check_list(params, grads, op, "grads", false);
  check_list(params, sums, op, "sums");
  if (params.empty()) return;
  if (cfg.step < 1) fail(Code::Arg, op, ": step must be ≥ 1, got ", cfg.step);
  cudaStream_t s = current_stream();
  if (!masters.empty()) {
    check_list(params, masters, op, "master weights");
    const std::vector<const std::vector<Tensor>*> ml{&params, &grads, &sums, &masters};
    adagrad_master_typed<bf16>(ml, DType::bf16, cfg, s);
    adagrad_master_typed<f16>(ml, DType::f16, cfg, s);
  }
  const std::vector<const std::vector<Tensor>*> lists{&params, &grads, &sums};
  adagrad_typed<float>(lists, cfg, s);
  adagrad_typed<double>(lists, cfg, s);
}

}  // namespace

FLOCK_REGISTER_KERNEL(adam_step, CUDA, adam_step_cuda);
FLOCK_REGISTER_KERNEL(sgd_step, CUDA, sgd_step_cuda);
FLOCK_REGISTER_KERNEL(rmsprop_step, CUDA, rmsprop_step_cuda);
FLOCK_REGISTER_KERNEL(adagrad_step, CUDA, adagrad_step_cuda);

}  // namespace flock::cuda
