// CUDA reductions over a [outer, red, inner] view, with the CPU's accumulation types and
// semantics (including the f32 output of a bf16/f16 sum's stage): sums in the storage's arithmetic type (int64 for integers),
// prod/var/logsumexp in double, NaN wins max/min, ties go to the first index, var is two-pass with a correction. Rows (inner ==
// 1) get a block each, reduced with warp shuffles; columns (inner > 1) get a thread per output walking `red`, so neighbouring
// threads read neighbouring addresses. Every serial sum a thread makes is cascaded (Cascade, as the CPU's cascade_columns): a
// serial f32 accumulator over 16,384 rows erred by 6e-6, a cascade by ~1e-7.
#include <cmath>
#include <type_traits>
#include "common.cuh"
#include "kernels.h"
#include "generated/reduce_codes.h"

namespace flock::cuda {
namespace {

template <class T>
using sum_t = std::conditional_t<std::is_floating_point_v<acc_t<T>>, acc_t<T>, int64_t>;

// A thread's running sum, cascaded: level k takes kChunk terms, then is added into level k+1 and
// restarts (a counter carrying a digit), so no accumulator holds more than kChunk terms and the
// error grows like log_kChunk(n), not n. The levels are indexed by constants once unrolled, so they
// stay in registers; the top one keeps whatever passes kChunk^(kLevels-1) terms.
template <class S>
struct Cascade {
  static constexpr int kLevels = 8;
  static constexpr int kChunkBits = 4;  // kChunk = 16
  S lvl[kLevels];
  int64_t n;
  __device__ __forceinline__ Cascade() : n(0) {
#pragma unroll
    for (int k = 0; k < kLevels; ++k) lvl[k] = S(0);
  }
  __device__ __forceinline__ void add(S v) {
    lvl[0] += v;
    ++n;
#pragma unroll
    for (int k = 0; k + 1 < kLevels; ++k) {
      if (n & ((int64_t(1) << (kChunkBits * (k + 1))) - 1)) break;
      lvl[k + 1] += lvl[k];
      lvl[k] = S(0);
    }
  }
  __device__ __forceinline__ S total() const {
    S s = lvl[0];
#pragma unroll
    for (int k = 1; k < kLevels; ++k) s += lvl[k];
    return s;
  }
};

template <class C>
__device__ __forceinline__ bool better(bool is_max, C v, C best) {
  if (best != best) return false;  // NaN already wins
  if (v != v) return true;
  return is_max ? v > best : v < best;
}

template <class V>
__device__ __forceinline__ V shfl_down(V v, int d) {
  return __shfl_down_sync(0xffffffffu, v, d);
}
__device__ __forceinline__ bool shfl_down(bool v, int d) { return __shfl_down_sync(0xffffffffu, static_cast<int>(v), d) != 0; }

// Block-wide reduction of one value per thread; the result is valid in thread 0.
template <class V, class F>
__device__ V block_reduce(V v, F f) {
  __shared__ unsigned char raw[32 * sizeof(V) > 32 * 8 ? 32 * sizeof(V) : 32 * 8];
  V* part = reinterpret_cast<V*>(raw);
  for (int d = 16; d > 0; d >>= 1) v = f(v, shfl_down(v, d));
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
  __syncthreads();  // `raw` may still be read by a previous call
  if (lane == 0) part[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < warps ? part[lane] : part[0];
    for (int d = 16; d > 0; d >>= 1) {
      V o = shfl_down(v, d);
      if (lane + d < warps) v = f(v, o);
    }
  }
  return v;
}

// Broadcasts thread 0's value to the block.
template <class V>
__device__ V block_share(V v) {
  __shared__ unsigned char raw[sizeof(V) > 8 ? sizeof(V) : 8];
  __syncthreads();
  if (threadIdx.x == 0) *reinterpret_cast<V*>(raw) = v;
  __syncthreads();
  return *reinterpret_cast<V*>(raw);
}

template <class T>
__device__ double reduce_row(ReduceOp op, const T* x, int64_t red, double correction, int64_t* arg) {
  using C = typename Num<T>::C;
  using S = sum_t<T>;
  const int64_t t0 = threadIdx.x, step = blockDim.x;
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::mean: {
      Cascade<S> c;
      for (int64_t r = t0; r < red; r += step) c.add(static_cast<S>(Num<T>::load(x[r])));
      const S s = block_reduce(c.total(), [](S a, S b) { return a + b; });
      double v = static_cast<double>(s);
      return op == ReduceOp::mean ? v / static_cast<double>(red) : v;
    }
    case ReduceOp::prod: {
      double p = 1;
      for (int64_t r = t0; r < red; r += step) p *= static_cast<double>(Num<T>::load(x[r]));
      return block_reduce(p, [](double a, double b) { return a * b; });
    }
    case ReduceOp::max:
    case ReduceOp::min:
    case ReduceOp::argmax:
    case ReduceOp::argmin: {
      const bool is_max = op == ReduceOp::max || op == ReduceOp::argmax;
      C best = Num<T>::load(x[t0 < red ? t0 : 0]);
      int64_t idx = t0 < red ? t0 : red;  // idle threads hold an index past the end: they lose ties
      for (int64_t r = t0 + step; r < red; r += step) {
        const C v = Num<T>::load(x[r]);
        if (better(is_max, v, best)) {
          best = v;
          idx = r;
        }
      }
      // Value and index travel together; a tie (or two NaNs) keeps the smaller index.
      for (int d = 16; d > 0; d >>= 1) {
        const C ov = shfl_down(best, d);
        const int64_t oi = shfl_down(idx, d);
        if (better(is_max, ov, best) || (!better(is_max, best, ov) && oi < idx)) {
          best = ov;
          idx = oi;
        }
      }
      __shared__ C pv[32];
      __shared__ int64_t pi[32];
      const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
      if (lane == 0) {
        pv[warp] = best;
        pi[warp] = idx;
      }
      __syncthreads();
      if (threadIdx.x == 0) {
        for (int w = 1; w < warps; ++w)
          if (better(is_max, pv[w], best) || (!better(is_max, best, pv[w]) && pi[w] < idx)) {
            best = pv[w];
            idx = pi[w];
          }
      }
      *arg = idx;
      return static_cast<double>(best);
    }
    case ReduceOp::var: {
      Cascade<double> s;
      for (int64_t r = t0; r < red; r += step) s.add(static_cast<double>(Num<T>::load(x[r])));
      const double mean =
          block_share(block_reduce(s.total(), [](double a, double b) { return a + b; })) / static_cast<double>(red);
      Cascade<double> c;
      for (int64_t r = t0; r < red; r += step) {
        const double d = static_cast<double>(Num<T>::load(x[r])) - mean;
        c.add(d * d);
      }
      const double q = block_reduce(c.total(), [](double a, double b) { return a + b; });
      const double denom = fmax(0.0, static_cast<double>(red) - correction);
      return denom > 0 ? q / denom : __longlong_as_double(0x7ff8000000000000LL);
    }
    case ReduceOp::logsumexp: {
      double m = -INFINITY;
      for (int64_t r = t0; r < red; r += step) m = fmax(m, static_cast<double>(Num<T>::load(x[r])));
      m = block_share(block_reduce(m, [](double a, double b) { return fmax(a, b); }));
      double s = 0;
      for (int64_t r = t0; r < red; r += step) s += isinf(m) ? 0.0 : exp(static_cast<double>(Num<T>::load(x[r])) - m);
      s = block_reduce(s, [](double a, double b) { return a + b; });
      return isinf(m) ? m : m + log(s);
    }
    default:
      return 0;
  }
}

template <class T>
__global__ void reduce_row_kernel(ReduceOp op, const T* x, void* out, int64_t outer, int64_t red, double correction, bool wide) {
  for (int64_t o = blockIdx.x; o < outer; o += gridDim.x) {
    int64_t arg = 0;
    const double v = reduce_row<T>(op, x + o * red, red, correction, &arg);
    if (threadIdx.x == 0) {
      if (op == ReduceOp::argmax || op == ReduceOp::argmin)
        static_cast<int64_t*>(out)[o] = arg;
      else if (wide)
        static_cast<float*>(out)[o] = static_cast<float>(v);
      else
        static_cast<T*>(out)[o] = Num<T>::from_double(v);
    }
    __syncthreads();
  }
}

template <class T>
__global__ void reduce_column_kernel(ReduceOp op, const T* x, void* out, int64_t outer, int64_t red, int64_t inner,
                                     double correction, bool wide) {
  using C = typename Num<T>::C;
  using S = sum_t<T>;
  FLOCK_GRID_STRIDE(j, outer * inner) {
    const int64_t o = j / inner, i = j % inner;
    const T* base = x + o * red * inner + i;
    auto at = [&](int64_t r) { return Num<T>::load(base[r * inner]); };
    double acc = 0;
    int64_t idx = 0;
    switch (op) {
      case ReduceOp::sum:
      case ReduceOp::mean: {
        Cascade<S> c;
        for (int64_t r = 0; r < red; ++r) c.add(static_cast<S>(at(r)));
        acc = static_cast<double>(c.total());
        if (op == ReduceOp::mean) acc /= static_cast<double>(red);
        break;
      }
      case ReduceOp::prod:
        acc = 1;
        for (int64_t r = 0; r < red; ++r) acc *= static_cast<double>(at(r));
        break;
      case ReduceOp::max:
      case ReduceOp::min:
      case ReduceOp::argmax:
      case ReduceOp::argmin: {
        const bool is_max = op == ReduceOp::max || op == ReduceOp::argmax;
        C best = at(0);
        for (int64_t r = 1; r < red; ++r) {
          const C v = at(r);
          if (better(is_max, v, best)) {
            best = v;
            idx = r;
          }
        }
        acc = static_cast<double>(best);
        break;
      }
      case ReduceOp::var: {
        Cascade<double> s;
        for (int64_t r = 0; r < red; ++r) s.add(static_cast<double>(at(r)));
        const double mean = s.total() / static_cast<double>(red);
        Cascade<double> c;
        for (int64_t r = 0; r < red; ++r) {
          const double d = static_cast<double>(at(r)) - mean;
          c.add(d * d);
        }
        acc = c.total();
        const double denom = fmax(0.0, static_cast<double>(red) - correction);
        acc = denom > 0 ? acc / denom : __longlong_as_double(0x7ff8000000000000LL);
        break;
      }
      case ReduceOp::logsumexp: {
        double m = -INFINITY;
        for (int64_t r = 0; r < red; ++r) m = fmax(m, static_cast<double>(at(r)));
        for (int64_t r = 0; r < red; ++r) acc += isinf(m) ? 0.0 : exp(static_cast<double>(at(r)) - m);
        acc = isinf(m) ? m : m + log(acc);
        break;
      }
      default:
        break;
    }
    if (op == ReduceOp::argmax || op == ReduceOp::argmin)
      static_cast<int64_t*>(out)[j] = idx;
    else if (wide)
      static_cast<float*>(out)[j] = static_cast<float>(acc);
    else
      static_cast<T*>(out)[j] = Num<T>::from_double(acc);
  }
}

void reduce_cuda(ReduceOp op, const Tensor& x, Tensor& out, int64_t outer, int64_t red, int64_t inner, double correction) {
  if (outer * inner == 0) return;
  if (op >= ReduceOp::count) fail(Code::Arg, "reduce: unknown op");
  const bool is_arg = op == ReduceOp::argmax || op == ReduceOp::argmin;
  if (red == 0 && (is_arg || op == ReduceOp::max || op == ReduceOp::min))
    fail(Code::Shape, "reduce: cannot take ", is_arg ? "an arg" : "the ",
         op == ReduceOp::max || op == ReduceOp::argmax ? "max" : "min", " of an empty dimension");
  // A stage of a bf16/f16 sum, mean or prod over scattered dims writes its f32 accumulator unrounded.
  const bool low_sum =
      (x.dtype == DType::bf16 || x.dtype == DType::f16) && (op == ReduceOp::sum || op == ReduceOp::mean || op == ReduceOp::prod);
  const DType want = is_arg ? DType::i64 : x.dtype;
  if (out.dtype != want && !(low_sum && out.dtype == DType::f32))
    fail(Code::DType, "reduce: output dtype ", dtype_name(out.dtype), " does not fit a ", dtype_name(x.dtype), " input");
  const bool wide = !is_arg && out.dtype != x.dtype;
  cudaStream_t s = current_stream();
  visit_numeric(x.dtype, "reduce", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (inner == 1) {
      const unsigned blocks = static_cast<unsigned>(outer < 65535 * 16 ? outer : 65535 * 16);
      // Short rows (class logits, small feature dims) would leave most of a 256-thread block idle.
      const int threads = red <= 32 ? 32 : red <= 64 ? 64 : red <= 128 ? 128 : kThreads;
      FLOCK_LAUNCH(blocks, threads, 0, s, reduce_row_kernel<T>)(op, x.data<T>(), out.raw(), outer, red, correction, wide);
    } else {
      FLOCK_LAUNCH(grid_for(outer * inner), kThreads, 0, s, reduce_column_kernel<T>)
      (op, x.data<T>(), out.raw(), outer, red, inner, correction, wide);
    }
  });
  check_launch("reduce_kernel");
}

}  // namespace

FLOCK_REGISTER_KERNEL(reduce, CUDA, reduce_cuda);

}  // namespace flock::cuda
