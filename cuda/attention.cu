// CUDA fused scaled dot-product attention, flash-attention-2 order. Forward: a block owns kRows
// query rows of one (batch, head), one thread per row holding its query and accumulator in
// registers; key/value tiles are staged in shared memory in the accumulation type, each tile's
// scores are made once and folded in with an online softmax. Causal tiles past the block's last
// row are never loaded. Backward: a delta pass (rowsum(dO * O)), then a dQ kernel (thread per
// query row, key tiles in shared memory) and a dK/dV kernel (thread per key row, query tiles in
// shared memory), so no gradient needs atomics. Storage may be f32, f64, bf16 or f16; arithmetic
// is f32 (f64 for f64). Dropout draws the same Philox words as the CPU kernel.
#include <cmath>
#include <cstdint>
#include "common.cuh"
#include "nn_kernels.h"
#include "philox.h"

namespace flock::cuda {
namespace {

constexpr int kRows = 64;  // query (or key) rows per block: one per thread

// Keys staged per tile so that two [tile, MAXD] arrays fit in 24 KiB of shared memory.
template <class C, int MAXD>
constexpr int tile_keys() {
  constexpr int n = 12288 / (MAXD * static_cast<int>(sizeof(C)));
  return n > 32 ? 32 : (n < 4 ? 4 : n);
}

template <class T>
struct Mask {
  const void* ptr;
  int kind;
  int64_t base;

  __device__ __forceinline__ typename Num<T>::C apply(typename Num<T>::C s, const AttnGeom& g, int64_t i, int64_t j) const {
    using C = typename Num<T>::C;
    if (g.causal && j > i) return -INFINITY;
    s *= static_cast<C>(g.scale);
    const int64_t at = base + i * g.mask_sq + j * g.mask_sk;
    if (kind == 1) return static_cast<const bool*>(ptr)[at] ? s : C(-INFINITY);
    if (kind == 2) return s + Num<T>::load(static_cast<const T*>(ptr)[at]);
    return s;
  }
};

template <class C>
__device__ __forceinline__ C keep_factor(const AttnGeom& g, int64_t b, int64_t i, int64_t j) {
  if (g.dropout_p <= 0) return C(1);
  const uint64_t e = static_cast<uint64_t>((b * g.tq + i) * g.tk + j);
  const Philox4 r = philox(g.seed, g.offset + e / 4);
  const bool keep = philox_uniform(r.v[e % 4]) < static_cast<float>(1 - g.dropout_p);
  return keep && g.dropout_p < 1 ? C(1) / C(1 - g.dropout_p) : C(0);
}

// One past the last key a block of query rows [i0, i0 + kRows) reads (causal: none past its last row).
__device__ __forceinline__ int64_t key_end(const AttnGeom& g, int64_t i0) {
  const int64_t last = i0 + kRows < g.tq ? i0 + kRows : g.tq;
  return g.causal ? (last < g.tk ? last : g.tk) : g.tk;
}

// Loads keys and values j0 .. j0 + nj of batch-head b into the block's shared tiles, zero-padded.
template <class T, class C, int KT, int MAXD>
__device__ __forceinline__ void load_kv_tile(C (&ks)[KT][MAXD], C (&vs)[KT][MAXD], const T* k, const T* v, const AttnGeom& g,
                                             int64_t b, int64_t j0, int nj) {
  for (int e = threadIdx.x; e < KT * MAXD; e += blockDim.x) {
    const int c = e / MAXD, x = e % MAXD;
    ks[c][x] = c < nj && x < g.d ? Num<T>::load(k[(b * g.tk + j0 + c) * g.d + x]) : C(0);
    vs[c][x] = c < nj && x < g.dv ? Num<T>::load(v[(b * g.tk + j0 + c) * g.dv + x]) : C(0);
  }
}

template <class T, int MAXD>
__global__ void attn_forward_kernel(const T* q, const T* k, const T* v, const void* mask, T* out, typename Num<T>::C* lse,
                                    AttnGeom g, int64_t blocks_per_bh) {
  using C = typename Num<T>::C;
  constexpr int KT = tile_keys<C, MAXD>();
  __shared__ C ks[KT][MAXD];
  __shared__ C vs[KT][MAXD];
  const int64_t b = blockIdx.x / blocks_per_bh;
  const int64_t i0 = (blockIdx.x % blocks_per_bh) * kRows;
  const int64_t i = i0 + threadIdx.x;
  const bool live = i < g.tq;
  const Mask<T> mk{mask, g.mask_kind, ((b / g.mask_div) % g.mask_mod) * g.mask_batch};
  C qr[MAXD], acc[MAXD], s[KT];
#pragma unroll
  for (int x = 0; x < MAXD; ++x) {
    qr[x] = live && x < g.d ? Num<T>::load(q[(b * g.tq + i) * g.d + x]) : C(0);
    acc[x] = 0;
  }
  C m = -INFINITY, l = 0;
  const int64_t jend = key_end(g, i0);
  for (int64_t j0 = 0; j0 < jend; j0 += KT) {
    const int nj = static_cast<int>(jend - j0 < KT ? jend - j0 : KT);
    __syncthreads();
    load_kv_tile(ks, vs, k, v, g, b, j0, nj);
    __syncthreads();
    if (!live) continue;
    C mx = m;
    for (int c = 0; c < KT; ++c) {
      C dotv = 0;
#pragma unroll
      for (int x = 0; x < MAXD; ++x) dotv += qr[x] * ks[c][x];
      s[c] = c < nj ? mk.apply(dotv, g, i, j0 + c) : C(-INFINITY);
      mx = s[c] > mx ? s[c] : mx;
    }
    if (mx == C(-INFINITY)) continue;
    const C alpha = exp(m - mx);
    C sum = 0;
#pragma unroll
    for (int x = 0; x < MAXD; ++x) acc[x] *= alpha;
    for (int c = 0; c < nj; ++c) {
      if (s[c] == C(-INFINITY)) continue;
      const C p = exp(s[c] - mx);
      sum += p;
      const C w = p * keep_factor<C>(g, b, i, j0 + c);
#pragma unroll
      for (int x = 0; x < MAXD; ++x) acc[x] += w * vs[c][x];
    }
    l = l * alpha + sum;
    m = mx;
  }
  if (!live) return;
  const C inv = l > 0 ? C(1) / l : (g.tk == 0 ? C(0) : C(NAN));
#pragma unroll
  for (int x = 0; x < MAXD; ++x)
    if (x < g.dv) out[(b * g.tq + i) * g.dv + x] = Num<T>::store(acc[x] * inv);
  lse[b * g.tq + i] = l > 0 ? m + log(l) : C(-INFINITY);
}

template <class T>
__global__ void attn_delta_kernel(const T* out, const T* gout, typename Num<T>::C* delta, int64_t rows, int64_t dv) {
  using C = typename Num<T>::C;
  FLOCK_GRID_STRIDE(r, rows) {
    C acc = 0;
    for (int64_t x = 0; x < dv; ++x) acc += Num<T>::load(out[r * dv + x]) * Num<T>::load(gout[r * dv + x]);
    delta[r] = acc;
  }
}

// dQ: thread per query row, key/value tiles in shared memory.
template <class T, int MAXD>
__global__ void attn_dq_kernel(const T* q, const T* k, const T* v, const void* mask, const T* gout, const typename Num<T>::C* lse,
                               const typename Num<T>::C* delta, T* gq, AttnGeom g, int64_t blocks_per_bh) {
  using C = typename Num<T>::C;
  constexpr int KT = tile_keys<C, MAXD>();
  __shared__ C ks[KT][MAXD];
  __shared__ C vs[KT][MAXD];
  const int64_t b = blockIdx.x / blocks_per_bh;
  const int64_t i0 = (blockIdx.x % blocks_per_bh) * kRows;
  const int64_t i = i0 + threadIdx.x;
  const bool live = i < g.tq;
  const Mask<T> mk{mask, g.mask_kind, ((b / g.mask_div) % g.mask_mod) * g.mask_batch};
  C qr[MAXD], gr[MAXD], dq[MAXD];
#pragma unroll
  for (int x = 0; x < MAXD; ++x) {
    qr[x] = live && x < g.d ? Num<T>::load(q[(b * g.tq + i) * g.d + x]) : C(0);
    gr[x] = live && x < g.dv ? Num<T>::load(gout[(b * g.tq + i) * g.dv + x]) : C(0);
    dq[x] = 0;
  }
  const C li = live ? lse[b * g.tq + i] : C(0), di = live ? delta[b * g.tq + i] : C(0);
  const int64_t jend = key_end(g, i0);
  for (int64_t j0 = 0; j0 < jend; j0 += KT) {
    const int nj = static_cast<int>(jend - j0 < KT ? jend - j0 : KT);
    __syncthreads();
    load_kv_tile(ks, vs, k, v, g, b, j0, nj);
    __syncthreads();
    if (!live) continue;
    for (int c = 0; c < nj; ++c) {
      C dotv = 0, dp = 0;
#pragma unroll
      for (int x = 0; x < MAXD; ++x) {
        dotv += qr[x] * ks[c][x];
        dp += gr[x] * vs[c][x];
      }
      const C s = mk.apply(dotv, g, i, j0 + c);
      if (s == C(-INFINITY) && li != C(-INFINITY)) continue;
      const C p = exp(s - li);
      const C ds = p * (dp * keep_factor<C>(g, b, i, j0 + c) - di) * static_cast<C>(g.scale);
#pragma unroll
      for (int x = 0; x < MAXD; ++x) dq[x] += ds * ks[c][x];
    }
  }
  if (!live) return;
#pragma unroll
  for (int x = 0; x < MAXD; ++x)
    if (x < g.d) gq[(b * g.tq + i) * g.d + x] = Num<T>::store(dq[x]);
}

// dK and dV: thread per key row, query/grad tiles in shared memory.
template <class T, int MAXD>
__global__ void attn_dkdv_kernel(const T* q, const T* k, const T* v, const void* mask, const T* gout,
                                 const typename Num<T>::C* lse, const typename Num<T>::C* delta, T* gk, T* gv, AttnGeom g,
                                 int64_t blocks_per_bh) {
  using C = typename Num<T>::C;
  constexpr int QT = tile_keys<C, MAXD>();
  __shared__ C qs[QT][MAXD];
  __shared__ C gs[QT][MAXD];
  __shared__ C ls[QT], ds_[QT];
  const int64_t b = blockIdx.x / blocks_per_bh;
  const int64_t j0 = (blockIdx.x % blocks_per_bh) * kRows;
  const int64_t j = j0 + threadIdx.x;
  const bool live = j < g.tk;
  const Mask<T> mk{mask, g.mask_kind, ((b / g.mask_div) % g.mask_mod) * g.mask_batch};
  C kr[MAXD], vr[MAXD], dk[MAXD], dv[MAXD];
#pragma unroll
  for (int x = 0; x < MAXD; ++x) {
    kr[x] = live && x < g.d ? Num<T>::load(k[(b * g.tk + j) * g.d + x]) : C(0);
    vr[x] = live && x < g.dv ? Num<T>::load(v[(b * g.tk + j) * g.dv + x]) : C(0);
    dk[x] = 0;
    dv[x] = 0;
  }
  const int64_t istart = g.causal ? j0 : 0;  // causal: queries before the block's first key see none of it
  for (int64_t t0 = istart; t0 < g.tq; t0 += QT) {
    const int ni = static_cast<int>(g.tq - t0 < QT ? g.tq - t0 : QT);
    __syncthreads();
    for (int e = threadIdx.x; e < QT * MAXD; e += blockDim.x) {
      const int r = e / MAXD, x = e % MAXD;
      qs[r][x] = r < ni && x < g.d ? Num<T>::load(q[(b * g.tq + t0 + r) * g.d + x]) : C(0);
      gs[r][x] = r < ni && x < g.dv ? Num<T>::load(gout[(b * g.tq + t0 + r) * g.dv + x]) : C(0);
    }
    for (int r = threadIdx.x; r < QT; r += blockDim.x) {
      ls[r] = r < ni ? lse[b * g.tq + t0 + r] : C(0);
      ds_[r] = r < ni ? delta[b * g.tq + t0 + r] : C(0);
    }
    __syncthreads();
    if (!live) continue;
    for (int r = 0; r < ni; ++r) {
      const int64_t i = t0 + r;
      C dotv = 0, dp = 0;
#pragma unroll
      for (int x = 0; x < MAXD; ++x) {
        dotv += qs[r][x] * kr[x];
        dp += gs[r][x] * vr[x];
      }
      const C s = mk.apply(dotv, g, i, j);
      if (s == C(-INFINITY) && ls[r] != C(-INFINITY)) continue;
      const C p = exp(s - ls[r]);
      const C z = keep_factor<C>(g, b, i, j);
      const C dsv = p * (dp * z - ds_[r]) * static_cast<C>(g.scale);
#pragma unroll
      for (int x = 0; x < MAXD; ++x) {
        dv[x] += p * z * gs[r][x];
        dk[x] += dsv * qs[r][x];
      }
    }
  }
  if (!live) return;
#pragma unroll
  for (int x = 0; x < MAXD; ++x) {
    if (x < g.d) gk[(b * g.tk + j) * g.d + x] = Num<T>::store(dk[x]);
    if (x < g.dv) gv[(b * g.tk + j) * g.dv + x] = Num<T>::store(dv[x]);
  }
}

// Calls fn(std::integral_constant<int, MAXD>) with the smallest supported head size ≥ max(d, dv).
template <class Fn>
void with_head_size(const AttnGeom& g, const char* op, Fn&& fn) {
  const int64_t need = g.d > g.dv ? g.d : g.dv;
  if (need <= 32)
    fn(std::integral_constant<int, 32>{});
  else if (need <= 64)
    fn(std::integral_constant<int, 64>{});
  else if (need <= 128)
    fn(std::integral_constant<int, 128>{});
  else if (need <= 256)
    fn(std::integral_constant<int, 256>{});
  else
    fail(Code::Shape, op, ": head size ", need, " is over the CUDA kernel's limit of 256");
}

void attention_forward_cuda(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask, Tensor& out, Tensor& lse,
                            const AttnGeom& g) {
  const char* op = "scaledDotProductAttention";
  cudaStream_t s = current_stream();
  const int64_t blocks = ceil_div(g.tq, kRows);
  if (g.bh * blocks > 0x7fffffff) fail(Code::Shape, op, ": batch × query blocks exceeds the CUDA grid");
  visit_float(q.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = typename Num<T>::C;
    with_head_size(g, op, [&](auto maxd) {
      FLOCK_LAUNCH(static_cast<unsigned>(g.bh * blocks), kRows, 0, s, attn_forward_kernel<T, decltype(maxd)::value>)
      (q.data<T>(), k.data<T>(), v.data<T>(), mask ? mask->raw() : nullptr, out.data<T>(), lse.data<C>(), g, blocks);
    });
  });
  check_launch("attn_forward_kernel");
}

void attention_backward_cuda(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask, const Tensor& out,
                             const Tensor& lse, const Tensor& gout, Tensor& delta, Tensor& gq, Tensor& gk, Tensor& gv,
                             const AttnGeom& g) {
  const char* op = "scaledDotProductAttentionBackward";
  cudaStream_t s = current_stream();
  const int64_t qblocks = ceil_div(g.tq, kRows), kblocks = ceil_div(g.tk, kRows);
  if (g.bh * (qblocks > kblocks ? qblocks : kblocks) > 0x7fffffff)
    fail(Code::Shape, op, ": batch × blocks exceeds the CUDA grid");
  const void* mp = mask ? mask->raw() : nullptr;
  visit_float(q.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = typename Num<T>::C;
    if (g.bh * g.tq > 0) {
      FLOCK_LAUNCH(grid_for(g.bh * g.tq), kThreads, 0, s, attn_delta_kernel<T>)
      (out.data<T>(), gout.data<T>(), delta.data<C>(), g.bh * g.tq, g.dv);
      check_launch("attn_delta_kernel");
    }
    with_head_size(g, op, [&](auto maxd) {
      constexpr int D = decltype(maxd)::value;
      if (g.bh * qblocks > 0) {
        FLOCK_LAUNCH(static_cast<unsigned>(g.bh * qblocks), kRows, 0, s, attn_dq_kernel<T, D>)
        (q.data<T>(), k.data<T>(), v.data<T>(), mp, gout.data<T>(), lse.data<C>(), delta.data<C>(), gq.data<T>(), g, qblocks);
        check_launch("attn_dq_kernel");
      }
      if (g.bh * kblocks > 0) {
        FLOCK_LAUNCH(static_cast<unsigned>(g.bh * kblocks), kRows, 0, s, attn_dkdv_kernel<T, D>)
        (q.data<T>(), k.data<T>(), v.data<T>(), mp, gout.data<T>(), lse.data<C>(), delta.data<C>(), gk.data<T>(), gv.data<T>(), g,
         kblocks);
        check_launch("attn_dkdv_kernel");
      }
    });
  });
}

}  // namespace

FLOCK_REGISTER_KERNEL(attention_forward, CUDA, attention_forward_cuda);
FLOCK_REGISTER_KERNEL(attention_backward, CUDA, attention_backward_cuda);

}  // namespace flock::cuda
