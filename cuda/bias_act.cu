// CUDA bias + activation over [rows, n]: y = act(x + bias) and its derivative, the epilogue of a
// linear layer in one pass. Memory bound, so each thread moves 16-byte packs when the row length
// and the pointers allow it (a pack then never straddles two rows); otherwise single elements.
// The activation is a run-time switch, uniform across the grid, so it costs a branch, not
// divergence. Formulas come from scalar_math.h, shared with the CPU.
#include <cstdint>
#include "bias_act.h"
#include "common.cuh"
#include "scalar_math.h"
#include "generated/bias_act_codes.h"

namespace flock::cuda {
namespace {

template <class T, int V>
struct alignas(sizeof(T) * V) Pack {
  T v[V];
};

template <class C>
__device__ __forceinline__ C activate(BiasAct act, C v) {
  return act == BiasAct::none ? v : math::unary<C>(bias_act_unary(act), v, C(0), C(0));
}

template <class C>
__device__ __forceinline__ C derivative(BiasAct act, C v) {
  return act == BiasAct::none ? C(1) : math::unary_derivative<C>(bias_act_unary(act), v, C(0), C(0));
}

// `packs` packs of V elements; V divides n.
template <class T, int V>
__global__ void bias_act_forward_kernel(const T* x, const T* bias, T* y, int64_t packs, int64_t n, BiasAct act) {
  using P = Pack<T, V>;
  FLOCK_GRID_STRIDE(p, packs) {
    const int64_t j = (p * V) % n;
    const P xv = reinterpret_cast<const P*>(x)[p];
    const P bv = *reinterpret_cast<const P*>(bias + j);
    P out;
#pragma unroll
    for (int k = 0; k < V; ++k) out.v[k] = Num<T>::store(activate(act, Num<T>::load(xv.v[k]) + Num<T>::load(bv.v[k])));
    reinterpret_cast<P*>(y)[p] = out;
  }
}

template <class T, int V>
__global__ void bias_act_backward_kernel(const T* gy, const T* saved, const T* bias, T* gx, int64_t packs, int64_t n,
                                         BiasAct act) {
  using P = Pack<T, V>;
  using C = typename Num<T>::C;
  FLOCK_GRID_STRIDE(p, packs) {
    const int64_t j = (p * V) % n;
    const P gv = reinterpret_cast<const P*>(gy)[p];
    const P sv = reinterpret_cast<const P*>(saved)[p];
    P bv;
    if (bias) bv = *reinterpret_cast<const P*>(bias + j);
    P out;
#pragma unroll
    for (int k = 0; k < V; ++k) {
      const C pre = Num<T>::load(sv.v[k]) + (bias ? Num<T>::load(bv.v[k]) : C(0));
      out.v[k] = Num<T>::store(Num<T>::load(gv.v[k]) * derivative(act, pre));
    }
    reinterpret_cast<P*>(gx)[p] = out;
  }
}

bool aligned16(const void* p) { return p == nullptr || reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// Calls launch(tag, V) with the widest pack width that n and every pointer admit.
template <class Launch>
void with_pack(DType dtype, int64_t n, std::initializer_list<const void*> ptrs, const char* op, Launch launch) {
  visit_float(dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    constexpr int kWide = 16 / sizeof(T);
    bool wide = n % kWide == 0;
    for (const void* p : ptrs) wide = wide && aligned16(p);
    if (wide)
      launch(tag, std::integral_constant<int, kWide>{});
    else
      launch(tag, std::integral_constant<int, 1>{});
  });
}

void bias_act_cuda(const Tensor& x, const Tensor& bias, Tensor& y, BiasAct act) {
  const int64_t n = x.shape[1], total = x.numel();
  if (total == 0) return;
  cudaStream_t s = current_stream();
  with_pack(x.dtype, n, {x.raw(), bias.raw(), y.raw()}, "biasAct", [&](auto tag, auto width) {
    using T = typename decltype(tag)::type;
    constexpr int V = decltype(width)::value;
    const int64_t packs = total / V;
    FLOCK_LAUNCH(grid_for(packs), kThreads, 0, s, bias_act_forward_kernel<T, V>)
    (x.data<T>(), bias.data<T>(), y.data<T>(), packs, n, act);
  });
  check_launch("bias_act_forward_kernel");
}

void bias_act_backward_cuda(const Tensor& gy, const Tensor& saved, const Tensor* bias, Tensor& gx, BiasAct act) {
  const int64_t n = gy.shape[1], total = gy.numel();
  if (total == 0) return;
  cudaStream_t s = current_stream();
  const void* bp = bias ? bias->raw() : nullptr;
  with_pack(gy.dtype, n, {gy.raw(), saved.raw(), bp, gx.raw()}, "biasActBackward", [&](auto tag, auto width) {
    using T = typename decltype(tag)::type;
    constexpr int V = decltype(width)::value;
    const int64_t packs = total / V;
    FLOCK_LAUNCH(grid_for(packs), kThreads, 0, s, bias_act_backward_kernel<T, V>)
    (gy.data<T>(), saved.data<T>(), static_cast<const T*>(bp), gx.data<T>(), packs, n, act);
  });
  check_launch("bias_act_backward_kernel");
}

}  // namespace

FLOCK_REGISTER_KERNEL(bias_act, CUDA, bias_act_cuda);
FLOCK_REGISTER_KERNEL(bias_act_backward, CUDA, bias_act_backward_cuda);

}  // namespace flock::cuda
