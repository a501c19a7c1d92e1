// CPU fused scaled dot-product attention in f64 (f32, bf16 and f16 run the vectorised tiles of
// attention_fast.cc, the same algorithm computed in f32). Forward: each task takes a block of query rows of one
// (batch, head) and walks the keys in tiles with an online softmax (running max, running sum and a
// rescaled accumulator), so memory is O(tile), never O(tq * tk); it saves the output and each row's
// logsumexp. Backward (flash-attention-2 order): one task per (batch, head) walks key tiles and,
// inside, the query rows, recomputing each probability from the saved logsumexp; dK and dV of the
// tile stay in a local buffer, dQ in a per-task [tq, d] accumulator.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>
#include "attention.h"
#include "threadpool.h"

namespace flock::cpu {
namespace {

constexpr int64_t kRows = 32;  // query rows per forward task
constexpr int64_t kKeys = 64;  // keys per tile

template <class C>
C dot(const C* a, const C* b, int64_t n) {
  C s = 0;
  for (int64_t x = 0; x < n; ++x) s += a[x] * b[x];
  return s;
}

// The score of (b, i, j) after scale, causal cut and mask: -inf where it may not attend.
template <class T, class C>
struct Scorer {
  const AttnGeom& g;
  const void* mask;
  int64_t mask_base = 0;

  void at_batch(int64_t b) { mask_base = ((b / g.mask_div) % g.mask_mod) * g.mask_batch; }

  C score(C raw, int64_t i, int64_t j) const {
    if (g.causal && j > i) return -std::numeric_limits<C>::infinity();
    C s = raw * static_cast<C>(g.scale);
    if (g.mask_kind == 1) {
      if (!static_cast<const bool*>(mask)[mask_base + i * g.mask_sq + j * g.mask_sk]) return -std::numeric_limits<C>::infinity();
    } else if (g.mask_kind == 2) {
      s += static_cast<C>(static_cast<const T*>(mask)[mask_base + i * g.mask_sq + j * g.mask_sk]);
    }
    return s;
  }
};

template <class T, class L>
void forward_typed(const Tensor& qt, const Tensor& kt, const Tensor& vt, const Tensor* mask, Tensor& outt, Tensor& lset,
                   const AttnGeom& g) {
  using C = acc_t<T>;
  const T* q = qt.data<T>();
  const T* k = kt.data<T>();
  const T* v = vt.data<T>();
  T* out = outt.data<T>();
  L* lse = lset.data<L>();
  const int64_t blocks = (g.tq + kRows - 1) / kRows;
  const C ninf = -std::numeric_limits<C>::infinity();
  parallel_for(g.bh * blocks, 1, [&](int64_t t0, int64_t t1) {
    std::vector<C> qs(kRows * g.d), acc(kRows * g.dv), ks(kKeys * g.d), vs(kKeys * g.dv), s(kKeys), m(kRows), l(kRows);
    Scorer<T, C> sc{g, mask ? mask->raw() : nullptr};
    AttnDropper<C> drop(g);
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t b = t / blocks, i0 = (t % blocks) * kRows, ni = std::min(kRows, g.tq - i0);
      sc.at_batch(b);
      for (int64_t x = 0; x < ni * g.d; ++x) qs[x] = static_cast<C>(q[(b * g.tq + i0) * g.d + x]);
      std::fill(acc.begin(), acc.end(), C(0));
      std::fill(m.begin(), m.end(), ninf);
      std::fill(l.begin(), l.end(), C(0));
      const int64_t jend = g.causal ? std::min(g.tk, i0 + ni) : g.tk;  // later tiles are all masked
      for (int64_t j0 = 0; j0 < jend; j0 += kKeys) {
        const int64_t nj = std::min(kKeys, jend - j0);
        for (int64_t x = 0; x < nj * g.d; ++x) ks[x] = static_cast<C>(k[(b * g.tk + j0) * g.d + x]);
        for (int64_t x = 0; x < nj * g.dv; ++x) vs[x] = static_cast<C>(v[(b * g.tk + j0) * g.dv + x]);
        for (int64_t r = 0; r < ni; ++r) {
          const int64_t i = i0 + r;
          C mx = m[r];
          for (int64_t c = 0; c < nj; ++c) {
            s[c] = sc.score(dot(&qs[r * g.d], &ks[c * g.d], g.d), i, j0 + c);
            mx = std::max(mx, s[c]);
          }
          if (mx == ninf) continue;  // nothing attended yet
          const C alpha = std::exp(m[r] - mx);
          C* a = &acc[r * g.dv];
          C sum = 0;
          if (alpha != C(1))
            for (int64_t x = 0; x < g.dv; ++x) a[x] *= alpha;
          for (int64_t c = 0; c < nj; ++c) {
            if (s[c] == ninf) continue;
            const C p = std::exp(s[c] - mx);
            sum += p;
            const C w = p * drop.factor(b, i, j0 + c);
            if (w == C(0)) continue;
            const C* vr = &vs[c * g.dv];
            for (int64_t x = 0; x < g.dv; ++x) a[x] += w * vr[x];
          }
          l[r] = l[r] * alpha + sum;
          m[r] = mx;
        }
      }
      for (int64_t r = 0; r < ni; ++r) {
        const int64_t row = b * g.tq + i0 + r;
        // A row that attends to nothing is NaN, as softmax over all -inf is in PyTorch.
        // (With no keys at all the weighted sum is empty: zeros, as the unfused matmul gives.)
        const C inv = l[r] > 0 ? C(1) / l[r] : g.tk == 0 ? C(0) : std::numeric_limits<C>::quiet_NaN();
        for (int64_t x = 0; x < g.dv; ++x) out[row * g.dv + x] = static_cast<T>(acc[r * g.dv + x] * inv);
        lse[row] = static_cast<L>(l[r] > 0 ? m[r] + std::log(l[r]) : ninf);
      }
    }
  });
}

template <class T, class L>
void backward_typed(const Tensor& qt, const Tensor& kt, const Tensor& vt, const Tensor* mask, const Tensor& outt,
                    const Tensor& lset, const Tensor& goutt, Tensor& deltat, Tensor& gqt, Tensor& gkt, Tensor& gvt,
                    const AttnGeom& g) {
  using C = acc_t<T>;
  const T* q = qt.data<T>();
  const T* k = kt.data<T>();
  const T* v = vt.data<T>();
  const T* out = outt.data<T>();
  const T* gout = goutt.data<T>();
  const L* lse = lset.data<L>();
  L* delta = deltat.data<L>();
  T* gq = gqt.data<T>();
  T* gk = gkt.data<T>();
  T* gv = gvt.data<T>();
  parallel_for(g.bh, 1, [&](int64_t b0, int64_t b1) {
    std::vector<C> qs(g.tq * g.d), gos(g.tq * g.dv), dq(g.tq * g.d), ks(kKeys * g.d), vs(kKeys * g.dv), dk(kKeys * g.d),
        dv(kKeys * g.dv);
    Scorer<T, C> sc{g, mask ? mask->raw() : nullptr};
    AttnDropper<C> drop(g);
    const C ninf = -std::numeric_limits<C>::infinity();
    for (int64_t b = b0; b < b1; ++b) {
      sc.at_batch(b);
      for (int64_t x = 0; x < g.tq * g.d; ++x) qs[x] = static_cast<C>(q[b * g.tq * g.d + x]);
      for (int64_t x = 0; x < g.tq * g.dv; ++x) gos[x] = static_cast<C>(gout[b * g.tq * g.dv + x]);
      for (int64_t i = 0; i < g.tq; ++i) {
        C acc = 0;
        for (int64_t x = 0; x < g.dv; ++x) acc += gos[i * g.dv + x] * static_cast<C>(out[(b * g.tq + i) * g.dv + x]);
        delta[b * g.tq + i] = static_cast<L>(acc);
      }
      std::fill(dq.begin(), dq.end(), C(0));
      for (int64_t j0 = 0; j0 < g.tk; j0 += kKeys) {
        const int64_t nj = std::min(kKeys, g.tk - j0);
        for (int64_t x = 0; x < nj * g.d; ++x) ks[x] = static_cast<C>(k[(b * g.tk + j0) * g.d + x]);
        for (int64_t x = 0; x < nj * g.dv; ++x) vs[x] = static_cast<C>(v[(b * g.tk + j0) * g.dv + x]);
        std::fill(dk.begin(), dk.end(), C(0));
        std::fill(dv.begin(), dv.end(), C(0));
        for (int64_t i = g.causal ? j0 : 0; i < g.tq; ++i) {  // causal: queries before j0 see none of this tile
          const C li = static_cast<C>(lse[b * g.tq + i]);
          const C di = static_cast<C>(delta[b * g.tq + i]);
          const C* qi = &qs[i * g.d];
          const C* goi = &gos[i * g.dv];
          C* dqi = &dq[i * g.d];
          for (int64_t c = 0; c < nj; ++c) {
            const C s = sc.score(dot(qi, &ks[c * g.d], g.d), i, j0 + c);
            if (s == ninf && li != ninf) continue;  // probability exactly 0: no gradient
            const C p = std::exp(s - li);
            const C z = drop.factor(b, i, j0 + c);
            const C pz = p * z;
            C* dvc = &dv[c * g.dv];
            for (int64_t x = 0; x < g.dv; ++x) dvc[x] += pz * goi[x];
            const C dp = dot(goi, &vs[c * g.dv], g.dv) * z;
            const C ds = p * (dp - di) * static_cast<C>(g.scale);
            const C* kc = &ks[c * g.d];
            C* dkc = &dk[c * g.d];
            for (int64_t x = 0; x < g.d; ++x) {
              dqi[x] += ds * kc[x];
              dkc[x] += ds * qi[x];
            }
          }
        }
        for (int64_t x = 0; x < nj * g.d; ++x) gk[(b * g.tk + j0) * g.d + x] = static_cast<T>(dk[x]);
        for (int64_t x = 0; x < nj * g.dv; ++x) gv[(b * g.tk + j0) * g.dv + x] = static_cast<T>(dv[x]);
      }
      for (int64_t x = 0; x < g.tq * g.d; ++x) gq[b * g.tq * g.d + x] = static_cast<T>(dq[x]);
    }
  });
}

void attention_forward_cpu(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask, Tensor& out, Tensor& lse,
                           const AttnGeom& g) {
  if (q.dtype != DType::f64) return attention_forward_f32(q, k, v, mask, out, lse, g);
  forward_typed<double, double>(q, k, v, mask, out, lse, g);
}

void attention_backward_cpu(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask, const Tensor& out,
                            const Tensor& lse, const Tensor& gout, Tensor& delta, Tensor& gq, Tensor& gk, Tensor& gv,
                            const AttnGeom& g) {
  if (q.dtype != DType::f64) return attention_backward_f32(q, k, v, mask, out, lse, gout, delta, gq, gk, gv, g);
  backward_typed<double, double>(q, k, v, mask, out, lse, gout, delta, gq, gk, gv, g);
}

}  // namespace

FLOCK_REGISTER_KERNEL(attention_forward, CPU, attention_forward_cpu);
FLOCK_REGISTER_KERNEL(attention_backward, CPU, attention_backward_cpu);

}  // namespace flock::cpu
