// Pieces the CPU attention kernels share: dropout's keep factor from the Philox stream (the same
// element numbering as CUDA: (b·tq + i)·tk + j) and the f32-computed kernels of attention_fast.cc
// (f32, bf16 and f16 inputs) that attention.cc dispatches to; f64 runs attention.cc's own loops.
#pragma once
#include <cstdint>
#include "../nn_kernels.h"
#include "../philox.h"

namespace flock::cpu {

// Dropout's keep factor for weight (b, i, j): 0 when dropped, 1 / (1 - p) when kept.
template <class C>
struct AttnDropper {
  const AttnGeom& g;
  C keep_scale;
  uint64_t cached = ~uint64_t(0);
  Philox4 words{};

  explicit AttnDropper(const AttnGeom& geom) : g(geom), keep_scale(geom.dropout_p < 1 ? C(1) / C(1 - geom.dropout_p) : C(0)) {}

  C factor(int64_t b, int64_t i, int64_t j) {
    if (g.dropout_p <= 0) return C(1);
    const uint64_t e = static_cast<uint64_t>((b * g.tq + i) * g.tk + j);
    const uint64_t group = g.offset + e / 4;
    if (group != cached) {
      words = philox(g.seed, group);
      cached = group;
    }
    return philox_uniform(words.v[e % 4]) < static_cast<float>(1 - g.dropout_p) ? keep_scale : C(0);
  }
};

// Tiled kernels computing in f32 with vectorised score tiles and exp; q, k, v, out, gout, gq, gk
// and gv are f32, bf16 or f16 (all one dtype), lse and delta f32.
void attention_forward_f32(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask, Tensor& out, Tensor& lse,
                           const AttnGeom& g);
void attention_backward_f32(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask, const Tensor& out,
                            const Tensor& lse, const Tensor& gout, Tensor& delta, Tensor& gq, Tensor& gk, Tensor& gv,
                            const AttnGeom& g);

}  // namespace flock::cpu
