// CPU reductions over a [outer, red, inner] view: sum, mean, max, min, prod, argmax, argmin, var,
// logsumexp. bf16/f16 sum, mean and prod may write an f32 output (their accumulator, unrounded: one
// stage of a reduction over scattered dims). Rows (inner == 1) use many partial accumulators so the loop vectorises; columns
// (inner > 1) walk `red` rows of a block of outputs so memory is read in order. f32 sum and mean
// run a copy of that loop compiled per instruction set.
#include <cmath>
#include <limits>
#include <vector>
#include "../kernels.h"
#include "loops.h"

namespace flock::cpu {
namespace {

constexpr int64_t kLanes = 16;
constexpr int64_t kBlock = 64;

// Accumulation type: double for f64, float otherwise (ints accumulate in their own type, as torch).
template <class T> using sum_t = std::conditional_t<std::is_floating_point_v<acc_t<T>>, acc_t<T>, int64_t>;

template <class T, class A>
A row_sum(const T* x, int64_t n) {
  A acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int64_t j = 0; j < kLanes; ++j) acc[j] += static_cast<A>(static_cast<acc_t<T>>(x[i + j]));
  A s = 0;
  for (; i < n; ++i) s += static_cast<A>(static_cast<acc_t<T>>(x[i]));
  for (int64_t j = 0; j < kLanes; ++j) s += acc[j];
  return s;
}

template <class C>
inline bool better(ReduceOp op, C v, C best) {
  if (best != best) return false;  // NaN already wins
  if (v != v) return true;
  return op == ReduceOp::max || op == ReduceOp::argmax ? v > best : v < best;
}

template <class T>
void reduce_typed(ReduceOp op, const Tensor& x, Tensor& out, int64_t outer, int64_t red, int64_t inner, double correction) {
  using C = acc_t<T>;
  using S = sum_t<T>;
  const T* xp = x.data<T>();
  const bool is_arg = op == ReduceOp::argmax || op == ReduceOp::argmin;
  const bool wide = !is_arg && out.dtype != x.dtype;
  const int64_t blocks = (inner + kBlock - 1) / kBlock;
  parallel_for(outer * blocks, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, red * std::min(inner, kBlock))), [&](int64_t b0, int64_t b1) {
    double acc[kBlock], aux[kBlock];
    int64_t idx[kBlock];
    for (int64_t job = b0; job < b1; ++job) {
      const int64_t o = job / blocks, i0 = (job % blocks) * kBlock, w = std::min(kBlock, inner - i0);
      const T* base = xp + o * red * inner + i0;
      auto at = [&](int64_t r, int64_t i) { return static_cast<C>(base[r * inner + i]); };
      switch (op) {
        case ReduceOp::sum:
        case ReduceOp::mean: {
          if (inner == 1) {
            acc[0] = static_cast<double>(row_sum<T, S>(base, red));
          } else {
            S s[kBlock] = {};
            for (int64_t r = 0; r < red; ++r)
              for (int64_t i = 0; i < w; ++i) s[i] += static_cast<S>(at(r, i));
            for (int64_t i = 0; i < w; ++i) acc[i] = static_cast<double>(s[i]);
          }
          if (op == ReduceOp::mean)
            for (int64_t i = 0; i < w; ++i) acc[i] /= static_cast<double>(red);
          break;
        }
        case ReduceOp::prod: {
          for (int64_t i = 0; i < w; ++i) acc[i] = 1;
          for (int64_t r = 0; r < red; ++r)
            for (int64_t i = 0; i < w; ++i) acc[i] *= static_cast<double>(at(r, i));
          break;
        }
        case ReduceOp::max:
        case ReduceOp::min:
        case ReduceOp::argmax:
        case ReduceOp::argmin: {
          if (red == 0) fail(Code::Shape, "reduce: cannot take ", is_arg ? "an arg" : "the ", op == ReduceOp::max || op == ReduceOp::argmax ? "max" : "min", " of an empty dimension");
          C best[kBlock];
          for (int64_t i = 0; i < w; ++i) { best[i] = at(0, i); idx[i] = 0; }
          for (int64_t r = 1; r < red; ++r)
            for (int64_t i = 0; i < w; ++i) {
              C v = at(r, i);
              if (better(op, v, best[i])) { best[i] = v; idx[i] = r; }
            }
          for (int64_t i = 0; i < w; ++i) acc[i] = static_cast<double>(best[i]);
          break;
        }
        case ReduceOp::var: {
          for (int64_t i = 0; i < w; ++i) aux[i] = 0;
          for (int64_t r = 0; r < red; ++r)
            for (int64_t i = 0; i < w; ++i) aux[i] += static_cast<double>(at(r, i));
          for (int64_t i = 0; i < w; ++i) { aux[i] /= static_cast<double>(red); acc[i] = 0; }
          for (int64_t r = 0; r < red; ++r)
            for (int64_t i = 0; i < w; ++i) { double d = static_cast<double>(at(r, i)) - aux[i]; acc[i] += d * d; }
          const double denom = std::max(0.0, static_cast<double>(red) - correction);
          for (int64_t i = 0; i < w; ++i) acc[i] = denom > 0 ? acc[i] / denom : std::numeric_limits<double>::quiet_NaN();
          break;
        }
        case ReduceOp::logsumexp: {
          for (int64_t i = 0; i < w; ++i) aux[i] = -std::numeric_limits<double>::infinity();
          for (int64_t r = 0; r < red; ++r)
            for (int64_t i = 0; i < w; ++i) aux[i] = std::max(aux[i], static_cast<double>(at(r, i)));
          for (int64_t i = 0; i < w; ++i) acc[i] = 0;
          for (int64_t r = 0; r < red; ++r)
            for (int64_t i = 0; i < w; ++i) acc[i] += std::isinf(aux[i]) ? 0.0 : std::exp(static_cast<double>(at(r, i)) - aux[i]);
          for (int64_t i = 0; i < w; ++i) acc[i] = std::isinf(aux[i]) ? aux[i] : aux[i] + std::log(acc[i]);
          break;
        }
        default: fail(Code::Arg, "reduce: unknown op");
      }
      if (is_arg) {
        int64_t* dst = out.data<int64_t>() + o * inner + i0;
        for (int64_t i = 0; i < w; ++i) dst[i] = idx[i];
      } else if (wide) {  // a stage of a bf16/f16 reduction: the f32 accumulator, unrounded
        float* dst = out.data<float>() + o * inner + i0;
        for (int64_t i = 0; i < w; ++i) dst[i] = static_cast<float>(acc[i]);
      } else {
        T* dst = out.data<T>() + o * inner + i0;
        for (int64_t i = 0; i < w; ++i) dst[i] = from_double<T>(acc[i]);
      }
    }
  });
}

// f32 sum and mean, compiled per instruction set: rows in kLanes partial sums, columns a block of
// outputs at a time, in the same order as reduce_typed, so the bits match it on every ISA.
void sum_f32(const float* xp, float* op, int64_t outer, int64_t red, int64_t inner, bool mean) {
  const int64_t blocks = (inner + kBlock - 1) / kBlock;
  FLOCK_ISA_PARALLEL_FOR(outer * blocks, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, red * std::min(inner, kBlock))), b0, b1, {
    for (int64_t job = b0; job < b1; ++job) {
      const int64_t o = job / blocks, i0 = (job % blocks) * kBlock, w = std::min(kBlock, inner - i0);
      const float* base = xp + o * red * inner + i0;
      float s[kBlock] = {};
      if (inner == 1) {  // row_sum's lanes, written out so each ISA's copy has its own loop
        float lane[kLanes] = {};
        int64_t r = 0;
        for (; r + kLanes <= red; r += kLanes)
          for (int64_t j = 0; j < kLanes; ++j) lane[j] += base[r + j];
        for (; r < red; ++r) s[0] += base[r];
        for (int64_t j = 0; j < kLanes; ++j) s[0] += lane[j];
      } else {
        for (int64_t r = 0; r < red; ++r)
          for (int64_t i = 0; i < w; ++i) s[i] += base[r * inner + i];
      }
      float* dst = op + o * inner + i0;
      for (int64_t i = 0; i < w; ++i)
        dst[i] = mean ? static_cast<float>(static_cast<double>(s[i]) / static_cast<double>(red)) : s[i];
    }
  });
}

void reduce_cpu(ReduceOp op, const Tensor& x, Tensor& out, int64_t outer, int64_t red, int64_t inner, double correction) {
  if (outer * inner == 0) return;
  const bool is_arg = op == ReduceOp::argmax || op == ReduceOp::argmin;
  const bool low_sum = (x.dtype == DType::bf16 || x.dtype == DType::f16) && (op == ReduceOp::sum || op == ReduceOp::mean || op == ReduceOp::prod);
  const DType want = is_arg ? DType::i64 : x.dtype;
  if (out.dtype != want && !(low_sum && out.dtype == DType::f32))
    fail(Code::DType, "reduce: output dtype ", dtype_name(out.dtype), " does not fit a ", dtype_name(x.dtype), " input");
  if (x.dtype == DType::f32 && (op == ReduceOp::sum || op == ReduceOp::mean))
    return sum_f32(x.data<float>(), out.data<float>(), outer, red, inner, op == ReduceOp::mean);
  visit_numeric(x.dtype, "reduce", [&](auto tag) {
    using T = typename decltype(tag)::type;
    reduce_typed<T>(op, x, out, outer, red, inner, correction);
  });
}

}  // namespace

FLOCK_REGISTER_KERNEL(reduce, CPU, reduce_cpu);

}  // namespace flock::cpu
