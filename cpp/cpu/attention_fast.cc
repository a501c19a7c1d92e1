// CPU fused attention computed in f32 (f32, bf16 and f16 inputs), vectorised. Same algorithm as
// attention.cc's f64 loops (online softmax forward, flash-attention-2 order backward), arranged so
// the inner loops run along a tile of kK keys or along the head dim: each tile of keys is held
// transposed ([d][kK], zero-padded) so a query row's kK scores are d multiply-adds of whole
// vectors, and exp is the branch-free exp_f of vec_math.h. q is scaled once as it is loaded.
// The loops are compiled per instruction set (FLOCK_ISA_PARALLEL_FOR) and run at cpu_isa()'s width.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>
#include "attention.h"
#include "vec_math.h"
#include "loops.h"
#include "threadpool.h"

namespace flock::cpu {
namespace {

#define FLOCK_ATTN_INLINE inline __attribute__((always_inline))

constexpr int64_t kR = 32;  // query rows per forward task
constexpr int64_t kK = 32;  // keys per tile
constexpr float kNinf = -std::numeric_limits<float>::infinity();

template <class T>
FLOCK_ATTN_INLINE float ld(T v) {
  return static_cast<float>(v);
}

// Where row i of batch b starts in a q, k, v or output tensor: b = (b / heads, b % heads), so a
// packed [n, len, 3·embed] projection is read per head in place (heads = 1: a [bh, t, w] tensor).
struct Lay {
  int64_t heads, s_n, s_h, s_row, off;
  FLOCK_ATTN_INLINE int64_t at(int64_t b, int64_t i) const { return off + (b / heads) * s_n + (b % heads) * s_h + i * s_row; }
};

Lay contiguous(int64_t t, int64_t w) { return Lay{1, t * w, 0, w, 0}; }

FLOCK_ATTN_INLINE float tile_max(const float* s) {
  float m[kK / 2];
  for (int64_t c = 0; c < kK / 2; ++c) m[c] = s[c] > s[c + kK / 2] ? s[c] : s[c + kK / 2];
  float r = m[0];
  for (int64_t c = 1; c < kK / 2; ++c) r = m[c] > r ? m[c] : r;
  return r;
}

FLOCK_ATTN_INLINE float tile_sum(const float* p) {
  float h[kK / 2];
  for (int64_t c = 0; c < kK / 2; ++c) h[c] = p[c] + p[c + kK / 2];
  float r = 0;
  for (int64_t c = 0; c < kK / 2; ++c) r += h[c];
  return r;
}

// A vector of 16 floats for the accumulations: as locals only (never passed or returned), so each
// instruction-set copy of a kernel holds them in its own registers (zmm, two ymm, four xmm).
typedef float vf16 __attribute__((vector_size(64)));
static_assert(kK == 32, "tile_scores holds a tile's scores in two vf16");

// s[c] = qr · kt[:, c] for the kK keys of a tile (kt is [d][kK]), accumulated in registers.
FLOCK_ATTN_INLINE void tile_scores(const float* qr, const float* kt, int64_t d, float* s) {
  vf16 a0 = {}, a1 = {};
  for (int64_t x = 0; x < d; ++x) {
    vf16 k0, k1;
    __builtin_memcpy(&k0, kt + x * kK, sizeof k0);
    __builtin_memcpy(&k1, kt + x * kK + 16, sizeof k1);
    a0 += qr[x] * k0;
    a1 += qr[x] * k1;
  }
  __builtin_memcpy(s, &a0, sizeof a0);
  __builtin_memcpy(s + 16, &a1, sizeof a1);
}

// y[0, n) += Σ_{c < nc} w[c] · rows[c·stride, c·stride + n), 16 columns at a time in a register.
FLOCK_ATTN_INLINE void add_weighted_rows(float* y, const float* w, const float* rows, int64_t stride, int64_t nc, int64_t n) {
  int64_t x = 0;
  for (; x + 16 <= n; x += 16) {
    vf16 a;
    __builtin_memcpy(&a, y + x, sizeof a);
    for (int64_t c = 0; c < nc; ++c) {
      vf16 r;
      __builtin_memcpy(&r, rows + c * stride + x, sizeof r);
      a += w[c] * r;
    }
    __builtin_memcpy(y + x, &a, sizeof a);
  }
  for (; x < n; ++x) {
    float a = y[x];
    for (int64_t c = 0; c < nc; ++c) a += w[c] * rows[c * stride + x];
    y[x] = a;
  }
}

// The causal cut, the mask and the tile's padding applied to query i's scores of keys j0 + c.
template <class T>
struct TileMask {
  const AttnGeom& g;
  const void* mask;
  int64_t base = 0;

  void at_batch(int64_t b) { base = ((b / g.mask_div) % g.mask_mod) * g.mask_batch; }

  // Whether apply() can change anything for this (row, tile).
  FLOCK_ATTN_INLINE bool needed(int64_t i, int64_t j0, int64_t nj) const {
    return nj < kK || g.mask_kind != 0 || (g.causal && j0 + kK - 1 > i);
  }

  FLOCK_ATTN_INLINE void apply(float* s, int64_t i, int64_t j0, int64_t nj) const {
    const int64_t lim = std::max<int64_t>(0, g.causal ? std::min(nj, i - j0 + 1) : nj);
    for (int64_t c = lim; c < kK; ++c) s[c] = kNinf;
    const int64_t at = base + i * g.mask_sq + j0 * g.mask_sk;
    if (g.mask_kind == 1) {
      const bool* m = static_cast<const bool*>(mask) + at;
      for (int64_t c = 0; c < lim; ++c)
        if (!m[c * g.mask_sk]) s[c] = kNinf;
    } else if (g.mask_kind == 2) {
      const T* m = static_cast<const T*>(mask) + at;
      for (int64_t c = 0; c < lim; ++c) s[c] += ld(m[c * g.mask_sk]);
    }
  }
};

// Loads keys [j0, j0 + nj) of batch b: kt transposed and zero-padded to kK, kr (optional) and
// vs row-major, vt (optional) transposed and zero-padded.
template <class T>
FLOCK_ATTN_INLINE void load_tile(const T* k, const Lay& lk, const T* v, const Lay& lv, const AttnGeom& g, int64_t b, int64_t j0,
                                 int64_t nj, float* kt, float* kr, float* vs, float* vt) {
  const int64_t d = g.d, dv = g.dv;
  for (int64_t x = 0; x < d * kK; ++x) kt[x] = 0;
  if (vt)
    for (int64_t x = 0; x < dv * kK; ++x) vt[x] = 0;
  for (int64_t c = 0; c < nj; ++c) {
    const T* kc = k + lk.at(b, j0 + c);
    const T* vc = v + lv.at(b, j0 + c);
    for (int64_t x = 0; x < d; ++x) kt[x * kK + c] = ld(kc[x]);
    if (kr)
      for (int64_t x = 0; x < d; ++x) kr[c * d + x] = ld(kc[x]);
    if (vs)
      for (int64_t x = 0; x < dv; ++x) vs[c * dv + x] = ld(vc[x]);
    if (vt)
      for (int64_t x = 0; x < dv; ++x) vt[x * kK + c] = ld(vc[x]);
  }
}

template <class T>
struct FwdArgs {
  const T *q, *k, *v;
  T* out;
  float* lse;
  const void* mask;
  const AttnGeom& g;
  int64_t blocks;
  Lay lq, lk, lv, lo;
};

struct FwdScratch {
  std::vector<float> qs, kt, vs, acc, m, l;
  explicit FwdScratch(const AttnGeom& g) : qs(kR * g.d), kt(g.d * kK), vs(kK * g.dv), acc(kR * g.dv), m(kR), l(kR) {}
};

// One task: query rows [i0, i0 + kR) of batch b against every key tile it may see.
template <class T>
FLOCK_ATTN_INLINE void forward_block(const FwdArgs<T>& a, FwdScratch& w, TileMask<T>& tm, AttnDropper<float>& drop, int64_t t) {
  const AttnGeom& g = a.g;
  const int64_t d = g.d, dv = g.dv;
  const int64_t b = t / a.blocks, i0 = (t % a.blocks) * kR, ni = std::min(kR, g.tq - i0);
  tm.at_batch(b);
  const float scale = static_cast<float>(g.scale);
  float *qs = w.qs.data(), *kt = w.kt.data(), *vs = w.vs.data(), *acc = w.acc.data(), *m = w.m.data(), *l = w.l.data();
  for (int64_t r = 0; r < ni; ++r) {
    const T* qr = a.q + a.lq.at(b, i0 + r);
    for (int64_t x = 0; x < d; ++x) qs[r * d + x] = ld(qr[x]) * scale;
  }
  for (int64_t x = 0; x < ni * dv; ++x) acc[x] = 0;
  for (int64_t r = 0; r < ni; ++r) m[r] = kNinf, l[r] = 0;
  const int64_t jend = g.causal ? std::min(g.tk, i0 + ni) : g.tk;  // later keys are all cut
  float s[kK], p[kK];
  for (int64_t j0 = 0; j0 < jend; j0 += kK) {
    const int64_t nj = std::min(kK, jend - j0);
    load_tile(a.k, a.lk, a.v, a.lv, g, b, j0, nj, kt, nullptr, vs, nullptr);
    for (int64_t r = 0; r < ni; ++r) {
      const int64_t i = i0 + r;
      tile_scores(qs + r * d, kt, d, s);
      if (tm.needed(i, j0, nj)) tm.apply(s, i, j0, nj);
      const float mx = tile_max(s);
      const float mnew = mx > m[r] ? mx : m[r];
      if (mnew == kNinf) continue;  // nothing attended yet
      for (int64_t c = 0; c < kK; ++c) p[c] = fastmath::exp_f(s[c] - mnew);
      const float alpha = fastmath::exp_f(m[r] - mnew);
      l[r] = l[r] * alpha + tile_sum(p);
      m[r] = mnew;
      float* ar = acc + r * dv;
      if (alpha != 1.0f)
        for (int64_t x = 0; x < dv; ++x) ar[x] *= alpha;
      if (g.dropout_p > 0)
        for (int64_t c = 0; c < nj; ++c) p[c] *= drop.factor(b, i, j0 + c);
      add_weighted_rows(ar, p, vs, dv, nj, dv);
    }
  }
  for (int64_t r = 0; r < ni; ++r) {
    const int64_t row = b * g.tq + i0 + r;
    // A row that attends to nothing is NaN (softmax over all -inf); no keys at all give zeros.
    const float inv = l[r] > 0 ? 1.0f / l[r] : g.tk == 0 ? 0.0f : std::numeric_limits<float>::quiet_NaN();
    T* o = a.out + a.lo.at(b, i0 + r);
    for (int64_t x = 0; x < dv; ++x) o[x] = static_cast<T>(acc[r * dv + x] * inv);
    a.lse[row] = l[r] > 0 ? m[r] + std::log(l[r]) : kNinf;
  }
}

template <class T>
void forward_typed(const FwdArgs<T>& a) {
  const AttnGeom& g = a.g;
  FLOCK_ISA_PARALLEL_FOR(g.bh * a.blocks, 1, t0, t1, {
    FwdScratch w(g);
    TileMask<T> tm{g, a.mask};
    AttnDropper<float> drop(g);
    for (int64_t t = t0; t < t1; ++t) forward_block(a, w, tm, drop, t);
  });
}

template <class T>
struct BwdArgs {
  const T *q, *k, *v, *out, *gout;
  const float* lse;
  float* delta;
  T *gq, *gk, *gv;
  const void* mask;
  const AttnGeom& g;
  Lay lq, lk, lv, lo;
};

struct BwdScratch {
  std::vector<float> qs, dos, dq, kt, kr, vt, dk, dv;
  explicit BwdScratch(const AttnGeom& g)
      : qs(g.tq * g.d),
        dos(g.tq * g.dv),
        dq(g.tq * g.d),
        kt(g.d * kK),
        kr(kK * g.d),
        vt(g.dv * kK),
        dk(kK * g.d),
        dv(kK * g.dv) {}
};

// One task: every key tile of batch b, and inside each, the query rows that may see it.
template <class T>
FLOCK_ATTN_INLINE void backward_batch(const BwdArgs<T>& a, BwdScratch& w, TileMask<T>& tm, AttnDropper<float>& drop, int64_t b) {
  const AttnGeom& g = a.g;
  const int64_t d = g.d, dvn = g.dv, tq = g.tq;
  const float scale = static_cast<float>(g.scale);
  tm.at_batch(b);
  float *qs = w.qs.data(), *dos = w.dos.data(), *dq = w.dq.data(), *kt = w.kt.data(), *kr = w.kr.data(), *vt = w.vt.data();
  float *dk = w.dk.data(), *dv = w.dv.data();
  for (int64_t i = 0; i < tq; ++i) {
    const T* qr = a.q + a.lq.at(b, i);
    const T* gr = a.gout + a.lo.at(b, i);
    for (int64_t x = 0; x < d; ++x) qs[i * d + x] = ld(qr[x]) * scale;
    for (int64_t x = 0; x < dvn; ++x) dos[i * dvn + x] = ld(gr[x]);
  }
  for (int64_t i = 0; i < tq; ++i) {
    const T* o = a.out + a.lo.at(b, i);
    float acc = 0;
    for (int64_t x = 0; x < dvn; ++x) acc += dos[i * dvn + x] * ld(o[x]);
    a.delta[b * tq + i] = acc;
  }
  for (int64_t x = 0; x < tq * d; ++x) dq[x] = 0;
  float s[kK], p[kK], dp[kK];
  for (int64_t j0 = 0; j0 < g.tk; j0 += kK) {
    const int64_t nj = std::min(kK, g.tk - j0);
    load_tile(a.k, a.lk, a.v, a.lv, g, b, j0, nj, kt, kr, nullptr, vt);
    for (int64_t x = 0; x < nj * d; ++x) dk[x] = 0;
    for (int64_t x = 0; x < nj * dvn; ++x) dv[x] = 0;
    for (int64_t i = g.causal ? j0 : 0; i < tq; ++i) {  // causal: queries before j0 see none of this tile
      const float* qi = qs + i * d;
      const float* goi = dos + i * dvn;
      float* dqi = dq + i * d;
      const float li = a.lse[b * tq + i];
      const float di = a.delta[b * tq + i];
      tile_scores(qi, kt, d, s);
      if (tm.needed(i, j0, nj)) tm.apply(s, i, j0, nj);
      if (li == kNinf) {  // a row that attends to nothing: NaN gradients, as the composition gives
        for (int64_t c = 0; c < kK; ++c) p[c] = c < nj ? std::numeric_limits<float>::quiet_NaN() : 0.0f;
      } else {
        for (int64_t c = 0; c < kK; ++c) p[c] = fastmath::exp_f(s[c] - li);
      }
      tile_scores(goi, vt, dvn, dp);  // dp[c] = gout_i · v_c
      if (g.dropout_p > 0) {
        for (int64_t c = 0; c < nj; ++c) {
          const float z = drop.factor(b, i, j0 + c);
          dp[c] *= z;
          s[c] = p[c] * z;  // s now holds the kept weights
        }
      } else {
        for (int64_t c = 0; c < kK; ++c) s[c] = p[c];
      }
      for (int64_t c = 0; c < nj; ++c) {
        const float pc = s[c];
        if (pc == 0.0f) continue;
        float* dvc = dv + c * dvn;
        for (int64_t x = 0; x < dvn; ++x) dvc[x] += pc * goi[x];
      }
      for (int64_t c = 0; c < kK; ++c) dp[c] = p[c] * (dp[c] - di);  // dp now holds dS
      add_weighted_rows(dqi, dp, kr, d, nj, d);
      for (int64_t c = 0; c < nj; ++c) {
        const float ds = dp[c];
        if (ds == 0.0f) continue;
        float* dkc = dk + c * d;
        for (int64_t x = 0; x < d; ++x) dkc[x] += ds * qi[x];  // qi is already scaled
      }
    }
    for (int64_t c = 0; c < nj; ++c) {
      T* gkc = a.gk + a.lk.at(b, j0 + c);
      T* gvc = a.gv + a.lv.at(b, j0 + c);
      for (int64_t x = 0; x < d; ++x) gkc[x] = static_cast<T>(dk[c * d + x]);
      for (int64_t x = 0; x < dvn; ++x) gvc[x] = static_cast<T>(dv[c * dvn + x]);
    }
  }
  for (int64_t i = 0; i < tq; ++i) {
    T* gqi = a.gq + a.lq.at(b, i);
    for (int64_t x = 0; x < d; ++x) gqi[x] = static_cast<T>(dq[i * d + x] * scale);
  }
}

template <class T>
void backward_typed(const BwdArgs<T>& a) {
  const AttnGeom& g = a.g;
  FLOCK_ISA_PARALLEL_FOR(g.bh, 1, b0, b1, {
    BwdScratch w(g);
    TileMask<T> tm{g, a.mask};
    AttnDropper<float> drop(g);
    for (int64_t b = b0; b < b1; ++b) backward_batch(a, w, tm, drop, b);
  });
}

template <class Fn>
void visit_f32_computed(DType t, const char* op, Fn&& fn) {
  switch (t) {
    case DType::f32:
      return fn(type_tag<float>{});
    case DType::bf16:
      return fn(type_tag<bf16>{});
    case DType::f16:
      return fn(type_tag<f16>{});
    default:
      fail(Code::DType, op, ": expected f32, bf16 or f16, got ", dtype_name(t));
  }
}

}  // namespace

void attention_forward_f32(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask, Tensor& out, Tensor& lse,
                           const AttnGeom& g) {
  visit_f32_computed(q.dtype, "scaledDotProductAttention", [&](auto tag) {
    using T = typename decltype(tag)::type;
    forward_typed<T>(FwdArgs<T>{q.data<T>(), k.data<T>(), v.data<T>(), out.data<T>(), lse.data<float>(),
                                mask ? mask->raw() : nullptr, g, (g.tq + kR - 1) / kR, contiguous(g.tq, g.d),
                                contiguous(g.tk, g.d), contiguous(g.tk, g.dv), contiguous(g.tq, g.dv)});
  });
}

void attention_backward_f32(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask, const Tensor& out,
                            const Tensor& lse, const Tensor& gout, Tensor& delta, Tensor& gq, Tensor& gk, Tensor& gv,
                            const AttnGeom& g) {
  visit_f32_computed(q.dtype, "scaledDotProductAttentionBackward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    backward_typed<T>(BwdArgs<T>{q.data<T>(), k.data<T>(), v.data<T>(), out.data<T>(), gout.data<T>(), lse.data<float>(),
                                 delta.data<float>(), gq.data<T>(), gk.data<T>(), gv.data<T>(), mask ? mask->raw() : nullptr, g,
                                 contiguous(g.tq, g.d), contiguous(g.tk, g.d), contiguous(g.tk, g.dv), contiguous(g.tq, g.dv)});
  });
}

namespace {

// The layouts of q, k, v (columns 0, embed, 2·embed of qkv) and of the output, per AttnPacked.
struct PackedLays {
  Lay q, k, v, o;
};

PackedLays packed_lays(const AttnPacked& p, int64_t d) {
  const int64_t w = 3 * p.embed;
  const int64_t sn = p.batch_first ? p.len * w : w, srow = p.batch_first ? w : p.n * w;
  const int64_t on = p.batch_first ? p.len * p.embed : p.embed, orow = p.batch_first ? p.embed : p.n * p.embed;
  return {Lay{p.heads, sn, d, srow, 0}, Lay{p.heads, sn, d, srow, p.embed}, Lay{p.heads, sn, d, srow, 2 * p.embed},
          Lay{p.heads, on, d, orow, 0}};
}

void attention_packed_forward_cpu(const Tensor& qkv, const Tensor* mask, Tensor& out, Tensor& lse, const AttnGeom& g,
                                  const AttnPacked& p) {
  const PackedLays l = packed_lays(p, g.d);
  visit_f32_computed(qkv.dtype, "scaledDotProductAttention", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* base = qkv.data<T>();
    forward_typed<T>(FwdArgs<T>{base, base, base, out.data<T>(), lse.data<float>(), mask ? mask->raw() : nullptr, g,
                                (g.tq + kR - 1) / kR, l.q, l.k, l.v, l.o});
  });
}

void attention_packed_backward_cpu(const Tensor& qkv, const Tensor* mask, const Tensor& out, const Tensor& lse,
                                   const Tensor& gout, Tensor& delta, Tensor& gqkv, const AttnGeom& g, const AttnPacked& p) {
  const PackedLays l = packed_lays(p, g.d);
  visit_f32_computed(qkv.dtype, "scaledDotProductAttentionBackward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* base = qkv.data<T>();
    T* gbase = gqkv.data<T>();
    backward_typed<T>(BwdArgs<T>{base, base, base, out.data<T>(), gout.data<T>(), lse.data<float>(), delta.data<float>(), gbase,
                                 gbase, gbase, mask ? mask->raw() : nullptr, g, l.q, l.k, l.v, l.o});
  });
}

}  // namespace

FLOCK_REGISTER_KERNEL(attention_packed_forward, CPU, attention_packed_forward_cpu);
FLOCK_REGISTER_KERNEL(attention_packed_backward, CPU, attention_packed_backward_cpu);

}  // namespace flock::cpu
