// CPU bias + activation (forward and derivative) over [rows, n]. The activation is a template
// parameter and the bias row is read along the output row, so each inner loop is a plain
// element-wise loop the compiler can vectorise; rows are split over the intra-op pool. In f32 (and
// bf16/f16, computed in f32) the loops are compiled per instruction set (FLOCK_ISA_PARALLEL_FOR)
// and GELU uses the vectorisable erf and exp of vec_math.h instead of libm.
#include <algorithm>
#include <type_traits>
#include <vector>
#include "../bias_act.h"
#include "../scalar_math.h"
#include "vec_math.h"
#include "loops.h"
#include "../generated/bias_act_codes.h"

namespace flock::cpu {
namespace {

template <class Fn>
void with_act(BiasAct act, Fn&& fn) {
  using A = BiasAct;
  switch (act) {
    case A::none:
      return fn(std::integral_constant<A, A::none>{});
    case A::relu:
      return fn(std::integral_constant<A, A::relu>{});
    case A::gelu:
      return fn(std::integral_constant<A, A::gelu>{});
    case A::gelu_tanh:
      return fn(std::integral_constant<A, A::gelu_tanh>{});
    case A::silu:
      return fn(std::integral_constant<A, A::silu>{});
    case A::tanh:
      return fn(std::integral_constant<A, A::tanh>{});
    case A::sigmoid:
      return fn(std::integral_constant<A, A::sigmoid>{});
    default:
      fail(Code::Arg, "biasAct: unknown activation");
  }
}

template <BiasAct A, class C>
inline __attribute__((always_inline)) C activate(C v) {
  if constexpr (A == BiasAct::none)
    return v;
  else if constexpr (A == BiasAct::gelu && std::is_same_v<C, float>)
    return fastmath::gelu_f(v);
  else
    return math::unary<C>(bias_act_unary(A), v, C(0), C(0));
}

template <BiasAct A, class C>
inline __attribute__((always_inline)) C derivative(C v) {
  if constexpr (A == BiasAct::none)
    return C(1);
  else if constexpr (A == BiasAct::gelu && std::is_same_v<C, float>)
    return fastmath::gelu_grad_f(v);
  else
    return math::unary_derivative<C>(bias_act_unary(A), v, C(0), C(0));
}

// parallel_for over rows, compiled per instruction set when the compute type is f32.
template <class C, class Body>
void for_rows(int64_t rows, int64_t grain, Body&& body) {
  if constexpr (std::is_same_v<C, float>) {
    FLOCK_ISA_PARALLEL_FOR(rows, grain, r0, r1, body(r0, r1););
  } else {
    parallel_for(rows, grain, body);
  }
}

int64_t row_grain(int64_t n) { return std::max<int64_t>(1, kElementGrain / std::max<int64_t>(n, 1)); }

void bias_act_cpu(const Tensor& x, const Tensor& bias, Tensor& y, BiasAct act) {
  const int64_t rows = x.shape[0], n = x.shape[1];
  visit_float(x.dtype, "biasAct", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = acc_t<T>;
    const T* xp = x.data<T>();
    // An f32 bias with a bf16/f16 input (autocast's linear) is rounded to the input's dtype first,
    // exactly as casting it would, so the values are those of the cast graph.
    std::vector<T> rounded;
    const T* bp;
    if (bias.dtype == x.dtype) {
      bp = bias.data<T>();
    } else {
      const float* bf = bias.data<float>();
      rounded.assign(bf, bf + n);
      bp = rounded.data();
    }
    T* yp = y.data<T>();
    with_act(act, [&](auto a) {
      constexpr BiasAct kAct = decltype(a)::value;
      for_rows<C>(
          rows, row_grain(n), [&](int64_t r0, int64_t r1) __attribute__((always_inline)) {
            for (int64_t r = r0; r < r1; ++r) {
              const T* xr = xp + r * n;
              T* yr = yp + r * n;
              for (int64_t j = 0; j < n; ++j)
                yr[j] = static_cast<T>(activate<kAct, C>(static_cast<C>(xr[j]) + static_cast<C>(bp[j])));
            }
          });
    });
  });
}

void bias_act_backward_cpu(const Tensor& gy, const Tensor& saved, const Tensor* bias, Tensor& gx, BiasAct act) {
  const int64_t rows = gy.shape[0], n = gy.shape[1];
  visit_float(gy.dtype, "biasActBackward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = acc_t<T>;
    const T* gp = gy.data<T>();
    const T* sp = saved.data<T>();
    const T* bp = bias ? bias->data<T>() : nullptr;
    T* op = gx.data<T>();
    with_act(act, [&](auto a) {
      constexpr BiasAct kAct = decltype(a)::value;
      for_rows<C>(
          rows, row_grain(n), [&](int64_t r0, int64_t r1) __attribute__((always_inline)) {
            for (int64_t r = r0; r < r1; ++r) {
              const T* g = gp + r * n;
              const T* s = sp + r * n;
              T* o = op + r * n;
              if (bp) {
                for (int64_t j = 0; j < n; ++j)
                  o[j] = static_cast<T>(static_cast<C>(g[j]) * derivative<kAct, C>(static_cast<C>(s[j]) + static_cast<C>(bp[j])));
              } else {
                for (int64_t j = 0; j < n; ++j)
                  o[j] = static_cast<T>(static_cast<C>(g[j]) * derivative<kAct, C>(static_cast<C>(s[j])));
              }
            }
          });
    });
  });
}

}  // namespace

FLOCK_REGISTER_KERNEL(bias_act, CPU, bias_act_cpu);
FLOCK_REGISTER_KERNEL(bias_act_backward, CPU, bias_act_backward_cpu);

}  // namespace flock::cpu
