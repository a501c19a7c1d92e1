// CPU softmax and log-softmax over the middle axis of a [outer, dim, inner] view, computed in
// the accumulation type with the row maximum subtracted first so large logits cannot overflow.
// f32 rows (inner 1) take a loop compiled per instruction set, with a vectorisable exp (vec_math.h).
#include <cmath>
#include <limits>
#include <vector>
#include "../kernels.h"
#include "loops.h"
#include "vec_math.h"

namespace flock::cpu {
namespace {

template <class T>
void softmax_typed(const Tensor& x, Tensor& out, int64_t outer, int64_t dim, int64_t inner, bool log) {
  using C = acc_t<T>;
  const T* xp = x.data<T>();
  T* op = out.data<T>();
  parallel_for(outer * inner, std::max<int64_t>(1, 8192 / std::max<int64_t>(1, dim)), [&](int64_t b, int64_t e) {
    std::vector<C> tmp(static_cast<size_t>(dim));
    for (int64_t job = b; job < e; ++job) {
      const int64_t o = job / inner, i = job % inner;
      const T* src = xp + o * dim * inner + i;
      T* dst = op + o * dim * inner + i;
      C mx = -std::numeric_limits<C>::infinity();
      for (int64_t d = 0; d < dim; ++d) {
        tmp[d] = static_cast<C>(src[d * inner]);
        mx = std::max(mx, tmp[d]);
      }
      if (std::isinf(mx) && mx < 0) mx = 0;  // a row of -inf stays -inf / NaN-free where possible
      C sum = 0;
      for (int64_t d = 0; d < dim; ++d) {
        C ev = std::exp(tmp[d] - mx);
        sum += ev;
        if (!log) tmp[d] = ev;
      }
      if (log) {
        const C lse = mx + std::log(sum);
        for (int64_t d = 0; d < dim; ++d) dst[d * inner] = static_cast<T>(tmp[d] - lse);
      } else {
        const C inv = C(1) / sum;
        for (int64_t d = 0; d < dim; ++d) dst[d * inner] = static_cast<T>(tmp[d] * inv);
      }
    }
  });
}

// Contiguous f32 rows: the maximum, then e^(x − max) and its sum, in 16 lanes the compiler maps
// onto vector registers; the same lanes on every instruction set, so every ISA gives the same bits.
void softmax_rows_f32(const float* xp, float* op, int64_t rows, int64_t dim, bool log) {
  constexpr int64_t L = 16;
  FLOCK_ISA_PARALLEL_FOR(rows, std::max<int64_t>(1, 8192 / std::max<int64_t>(1, dim)), r0, r1, {
    for (int64_t r = r0; r < r1; ++r) {
      const float* src = xp + r * dim;
      float* dst = op + r * dim;
      float lane[L];
      for (int64_t j = 0; j < L; ++j) lane[j] = -INFINITY;
      int64_t d = 0;
      for (; d + L <= dim; d += L)
        for (int64_t j = 0; j < L; ++j) lane[j] = src[d + j] > lane[j] ? src[d + j] : lane[j];
      float mx = -INFINITY;
      for (; d < dim; ++d) mx = src[d] > mx ? src[d] : mx;
      for (int64_t j = 0; j < L; ++j) mx = lane[j] > mx ? lane[j] : mx;
      if (std::isinf(mx) && mx < 0) mx = 0;  // a row of -inf: e^(-inf) = 0 rather than NaN from -inf + inf
      for (int64_t j = 0; j < L; ++j) lane[j] = 0;
      float sum = 0;
      for (d = 0; d + L <= dim; d += L)
        for (int64_t j = 0; j < L; ++j) {
          const float e = fastmath::exp_f(src[d + j] - mx);
          if (!log) dst[d + j] = e;
          lane[j] += e;
        }
      for (; d < dim; ++d) {
        const float e = fastmath::exp_f(src[d] - mx);
        if (!log) dst[d] = e;
        sum += e;
      }
      for (int64_t j = 0; j < L; ++j) sum += lane[j];
      if (log) {
        const float lse = mx + std::log(sum);
        for (d = 0; d < dim; ++d) dst[d] = src[d] - lse;
      } else {
        const float inv = 1.0f / sum;
        for (d = 0; d < dim; ++d) dst[d] *= inv;
      }
    }
  });
}

void softmax_cpu(const Tensor& x, Tensor& out, int64_t outer, int64_t dim, int64_t inner, bool log) {
  if (x.dtype == DType::f32 && inner == 1) return softmax_rows_f32(x.data<float>(), out.data<float>(), outer, dim, log);
  visit_float(x.dtype, "softmax", [&](auto tag) {
    using T = typename decltype(tag)::type;
    softmax_typed<T>(x, out, outer, dim, inner, log);
  });
}

}  // namespace

FLOCK_REGISTER_KERNEL(softmax, CPU, softmax_cpu);

}  // namespace flock::cpu
