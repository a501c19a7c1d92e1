// CPU reductions over a [outer, red, inner] view: sum, mean, max, min, prod, argmax, argmin, var,
// logsumexp. bf16/f16 sum, mean and prod may write an f32 output (their accumulator, unrounded: one
// stage of a reduction over scattered dims). Rows (inner == 1) use many partial accumulators so the loop vectorises; columns
// (inner > 1) walk `red` rows of a block of outputs so memory is read in order. f32 sum and mean
// run a copy of that loop compiled per instruction set.
//
// Sums (and var's two sums) are cascaded: an accumulator takes kChunk terms, then is added into the
// next level up and restarts, so no accumulator ever holds more than kChunk terms and the rounding
// error grows like kChunk·log_kChunk(red)·eps instead of red·eps. An f32 sum(0) over 16,384 rows
// had 6e-6 relative error added serially; cascaded it is ~1e-7, as PyTorch's cascade_sum, for
// one extra add per output every kChunk rows (a few percent of the loop).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>
#include "../kernels.h"
#include "loops.h"
#include "../generated/reduce_codes.h"

namespace flock::cpu {
namespace {

#define FLOCK_REDUCE_INLINE inline __attribute__((always_inline))
#define FLOCK_LAMBDA_INLINE __attribute__((always_inline))

constexpr int64_t kLanes = 16;
constexpr int64_t kBlock = 64;
constexpr int64_t kChunk = 16;
constexpr int kLevels = 16;  // kChunk^16 terms: more than any tensor holds

// Accumulation type: double for f64, float otherwise (ints accumulate in their own type, as torch).
template <class T>
using sum_t = std::conditional_t<std::is_floating_point_v<acc_t<T>>, acc_t<T>, int64_t>;

// Levels a cascade over n terms uses: 1 + floor(log_kChunk(n)).
FLOCK_REDUCE_INLINE int cascade_levels(int64_t n) {
  int levels = 1;
  for (; n >= kChunk && levels < kLevels; n /= kChunk) ++levels;
  return levels;
}

// The levels above the first of `w` cascaded sums. Level 0 is the caller's: a local array that
// sums kChunk terms in registers (a stack array updated every row would be a store-to-load chain)
// and is then pushed here.
template <class S, int64_t W>
struct CascadeLevels {
  S lvl[kLevels][W];
  int levels;
  int64_t pushed = 0;
  FLOCK_REDUCE_INLINE CascadeLevels(int64_t chunks, int64_t w) : levels(cascade_levels(chunks)) {
    for (int l = 0; l < levels; ++l)
      for (int64_t i = 0; i < w; ++i) lvl[l][i] = 0;
  }
  // Adds one chunk's sums, carrying a full level into the next as a counter carries a digit.
  FLOCK_REDUCE_INLINE void push(const S* part, int64_t w) {
    for (int64_t i = 0; i < w; ++i) lvl[0][i] += part[i];
    ++pushed;
    for (int64_t n = pushed, l = 0; n % kChunk == 0 && l + 1 < levels; n /= kChunk, ++l)
      for (int64_t i = 0; i < w; ++i) {
        lvl[l + 1][i] += lvl[l][i];
        lvl[l][i] = 0;
      }
  }
  FLOCK_REDUCE_INLINE void total(S* out, int64_t w) const {
    for (int64_t i = 0; i < w; ++i) {
      S s = lvl[0][i];
      for (int l = 1; l < levels; ++l) s += lvl[l][i];
      out[i] = s;
    }
  }
};

// Cascaded sums of `w` (≤ kBlock) columns over `red` rows: out[i] = Σ_r value(r, i). The order of
// additions depends only on red, never on the ISA or the thread count, so every copy rounds alike.
// A full block (W = kBlock) has constant loop bounds, so its chunk sums stay in vector registers.
template <int64_t W, class S, class Value>
FLOCK_REDUCE_INLINE void cascade_block(int64_t red, int64_t width, S* out, Value&& value) {
  const int64_t w = W > 0 ? W : width;
  CascadeLevels<S, kBlock> c((red + kChunk - 1) / kChunk, w);
  for (int64_t r0 = 0; r0 < red; r0 += kChunk) {
    const int64_t r1 = std::min(red, r0 + kChunk);
    S part[kBlock];
    for (int64_t i = 0; i < w; ++i) part[i] = value(r0, i);
    for (int64_t r = r0 + 1; r < r1; ++r)
      for (int64_t i = 0; i < w; ++i) part[i] += value(r, i);
    c.push(part, w);
  }
  c.total(out, w);
}

template <class S, class Value>
FLOCK_REDUCE_INLINE void cascade_columns(int64_t red, int64_t w, S* out, Value&& value) {
  if (w == kBlock)
    cascade_block<kBlock>(red, w, out, value);
  else
    cascade_block<0>(red, w, out, value);
}

// A cascaded sum of one contiguous row: kLanes interleaved sums (so the loop vectorises, in one
// register per lane group), chunks of kChunk·kLanes elements pushed up the levels, then the lanes
// added pairwise and the tail last.
template <class S, class T>
FLOCK_REDUCE_INLINE S row_sum(const T* x, int64_t n) {
  constexpr int64_t kSpan = kChunk * kLanes;
  auto load = [&](int64_t i) FLOCK_LAMBDA_INLINE { return static_cast<S>(static_cast<acc_t<T>>(x[i])); };
  CascadeLevels<S, kLanes> c((n + kSpan - 1) / kSpan, kLanes);
  int64_t i = 0;
  for (; i + kSpan <= n; i += kSpan) {
    S part[kLanes] = {};
    for (int64_t r = 0; r < kChunk; ++r)
      for (int64_t j = 0; j < kLanes; ++j) part[j] += load(i + r * kLanes + j);
    c.push(part, kLanes);
  }
  if (i + kLanes <= n) {  // a last, partial chunk of whole lane groups
    S part[kLanes] = {};
    for (; i + kLanes <= n; i += kLanes)
      for (int64_t j = 0; j < kLanes; ++j) part[j] += load(i + j);
    c.push(part, kLanes);
  }
  S lane[kLanes];
  c.total(lane, kLanes);
  for (int64_t h = kLanes / 2; h > 0; h /= 2)
    for (int64_t j = 0; j < h; ++j) lane[j] += lane[j + h];
  S tail = 0;
  for (; i < n; ++i) tail += load(i);
  return lane[0] + tail;
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
  parallel_for(outer * blocks, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, red * std::min(inner, kBlock))),
               [&](int64_t b0, int64_t b1) {
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
                         acc[0] = static_cast<double>(row_sum<S>(base, red));
                       } else {
                         S s[kBlock];
                         cascade_columns<S>(red, w, s,
                                            [&](int64_t r, int64_t i) FLOCK_LAMBDA_INLINE { return static_cast<S>(at(r, i)); });
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
                       if (red == 0)
                         fail(Code::Shape, "reduce: cannot take ", is_arg ? "an arg" : "the ",
                              op == ReduceOp::max || op == ReduceOp::argmax ? "max" : "min", " of an empty dimension");
                       C best[kBlock];
                       for (int64_t i = 0; i < w; ++i) {
                         best[i] = at(0, i);
                         idx[i] = 0;
                       }
                       for (int64_t r = 1; r < red; ++r)
                         for (int64_t i = 0; i < w; ++i) {
                           C v = at(r, i);
                           if (better(op, v, best[i])) {
                             best[i] = v;
                             idx[i] = r;
                           }
                         }
                       for (int64_t i = 0; i < w; ++i) acc[i] = static_cast<double>(best[i]);
                       break;
                     }
                     case ReduceOp::var: {
                       cascade_columns<double>(
                           red, w, aux, [&](int64_t r, int64_t i) FLOCK_LAMBDA_INLINE { return static_cast<double>(at(r, i)); });
                       for (int64_t i = 0; i < w; ++i) aux[i] /= static_cast<double>(red);
                       cascade_columns<double>(red, w, acc, [&](int64_t r, int64_t i) FLOCK_LAMBDA_INLINE {
                         const double d = static_cast<double>(at(r, i)) - aux[i];
                         return d * d;
                       });
                       const double denom = std::max(0.0, static_cast<double>(red) - correction);
                       for (int64_t i = 0; i < w; ++i)
                         acc[i] = denom > 0 ? acc[i] / denom : std::numeric_limits<double>::quiet_NaN();
                       break;
                     }
                     case ReduceOp::logsumexp: {
                       for (int64_t i = 0; i < w; ++i) aux[i] = -std::numeric_limits<double>::infinity();
                       for (int64_t r = 0; r < red; ++r)
                         for (int64_t i = 0; i < w; ++i) aux[i] = std::max(aux[i], static_cast<double>(at(r, i)));
                       for (int64_t i = 0; i < w; ++i) acc[i] = 0;
                       for (int64_t r = 0; r < red; ++r)
                         for (int64_t i = 0; i < w; ++i)
                           acc[i] += std::isinf(aux[i]) ? 0.0 : std::exp(static_cast<double>(at(r, i)) - aux[i]);
                       for (int64_t i = 0; i < w; ++i) acc[i] = std::isinf(aux[i]) ? aux[i] : aux[i] + std::log(acc[i]);
                       break;
                     }
                     default:
                       fail(Code::Arg, "reduce: unknown op");
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

// f32 sum and mean, compiled per instruction set (the cascade is always_inline, so each copy has its
// own loop): rows in kLanes cascades, columns a block of outputs at a time, in the same order as
// reduce_typed, so the bits match it on every ISA.
void sum_f32(const float* xp, float* op, int64_t outer, int64_t red, int64_t inner, bool mean) {
  const int64_t blocks = (inner + kBlock - 1) / kBlock;
  FLOCK_ISA_PARALLEL_FOR(
      outer * blocks, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, red * std::min(inner, kBlock))), b0, b1, {
        for (int64_t job = b0; job < b1; ++job) {
          const int64_t o = job / blocks, i0 = (job % blocks) * kBlock, w = std::min(kBlock, inner - i0);
          const float* base = xp + o * red * inner + i0;
          float s[kBlock];
          if (inner == 1)
            s[0] = row_sum<float>(base, red);
          else
            cascade_columns<float>(red, w, s, [&](int64_t r, int64_t i) FLOCK_LAMBDA_INLINE { return base[r * inner + i]; });
          float* dst = op + o * inner + i0;
          for (int64_t i = 0; i < w; ++i)
            dst[i] = mean ? static_cast<float>(static_cast<double>(s[i]) / static_cast<double>(red)) : s[i];
        }
      });
}

void reduce_cpu(ReduceOp op, const Tensor& x, Tensor& out, int64_t outer, int64_t red, int64_t inner, double correction) {
  if (outer * inner == 0) return;
  const bool is_arg = op == ReduceOp::argmax || op == ReduceOp::argmin;
  const bool low_sum =
      (x.dtype == DType::bf16 || x.dtype == DType::f16) && (op == ReduceOp::sum || op == ReduceOp::mean || op == ReduceOp::prod);
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
