// bf16 2-D convolution on CPUs with AVX512_BF16: images are unfolded (im2col) into bf16 columns
// and multiplied by the bf16 weight with VDPBF16PS (pairs of bf16 products summed in f32). Every
// sum stays in f32 until the result is rounded to bf16 once: the forward adds the bias in f32; the
// input gradient folds the columns back (col2im) into an f32 image; the weight gradient sums its
// images in f32. The operands are never widened in memory, which is what the f32 fallback
// (cpp/ops/nn.cc `wide`) costs. Two ways, chosen as conv.cc chooses for f32 (conv_by_images):
// - image by image: each pool thread takes a fixed range of images and unfolds one image of a
//   group at a time into its own cache-resident columns, then runs a serial GEMM whose f32 tiles
//   go straight into the output with the bias (bf16_gemm_tiles), through col2im into the input
//   gradient, or into the thread's own f32 weight-gradient partial (partials summed in a fixed
//   order);
// - batched (fewer images than threads): a chunk of images side by side in one column matrix, one
//   GEMM per chunk that splits itself over the pool.
#include "conv_bf16.h"
#include <algorithm>
#include <cstring>
#include <utility>
#include "bf16_vec.h"
#include "gemm.h"
#include "im2col.h"
#include "scratch.h"
#include "threadpool.h"

namespace flock::cpu {
namespace {

using u16 = uint16_t;

// Bound on the bf16 column matrix and its f32 product per chunk of images.
constexpr int64_t kChunkBytes = int64_t(32) << 20;

inline bf16* as_bf16(u16* p) { return reinterpret_cast<bf16*>(p); }

inline float widen(u16 b) {
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Per group cg input and ocg output channels, kk = cg·KH·KW column rows, ohw output pixels per
// image, `chunk` images per GEMM.
struct Plan {
  int64_t cg, ocg, kk, ohw, chunk;
  explicit Plan(const Conv2dGeom& g) : cg(g.c / g.groups), ocg(g.oc / g.groups), kk(0), ohw(g.oh * g.ow), chunk(1) {
    kk = cg * g.kh * g.kw;
    const int64_t per_image = std::max<int64_t>(1, (kk * 2 + ocg * 4 + kk * 4) * ohw);
    chunk = std::clamp<int64_t>(kChunkBytes / per_image, 1, std::max<int64_t>(1, g.n));
  }
};

// Unfolds images [n0, n0 + nc) of group gi into col ([kk, nc·OHW]), one image per task.
void unfold(const u16* x, u16* col, int64_t n0, int64_t nc, int64_t gi, const Plan& p, const Conv2dGeom& g) {
  parallel_for(nc, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) im2col(x + ((n0 + i) * g.c + gi * p.cg) * g.h * g.w, col + i * p.ohw, nc * p.ohw, p.cg, g);
  });
}

// Offset in an [N, OC, OHW] tensor of image n0 + i, channel o of group gi; and in the [ocg, nc·OHW] matrix.
inline int64_t tensor_row(int64_t n0, int64_t i, int64_t gi, int64_t o, const Plan& p, const Conv2dGeom& g) {
  return ((n0 + i) * g.oc + gi * p.ocg + o) * p.ohw;
}

void forward(const Tensor& xt, const Tensor& wt, const Tensor* bt, Tensor& yt, const Conv2dGeom& g) {
  const u16* x = reinterpret_cast<const u16*>(xt.data<bf16>());
  const u16* w = reinterpret_cast<const u16*>(wt.data<bf16>());
  const u16* bias = bt ? reinterpret_cast<const u16*>(bt->data<bf16>()) : nullptr;
  u16* y = reinterpret_cast<u16*>(yt.data<bf16>());
  const Plan p(g);
  thread_local AlignedBuffer<u16> col_buf;
  thread_local AlignedBuffer<float> out_buf;
  u16* col = col_buf.reserve(static_cast<size_t>(p.kk * p.chunk * p.ohw));
  float* out = out_buf.reserve(static_cast<size_t>(p.ocg * p.chunk * p.ohw));
  for (int64_t n0 = 0; n0 < g.n; n0 += p.chunk) {
    const int64_t nc = std::min(p.chunk, g.n - n0), ld = nc * p.ohw;
    for (int64_t gi = 0; gi < g.groups; ++gi) {
      unfold(x, col, n0, nc, gi, p, g);
      bf16_gemm_f32(p.ocg, ld, p.kk, w + gi * p.ocg * p.kk, p.kk, false, col, ld, false, out, ld, false);
      parallel_for(nc, 1, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i)
          for (int64_t o = 0; o < p.ocg; ++o) {
            const float v = bias ? widen(bias[gi * p.ocg + o]) : 0.0f;
            const float* src = out + o * ld + i * p.ohw;
            u16* dst = y + tensor_row(n0, i, gi, o, p, g);
            bf16_narrow_add_cvtne(src, v, as_bf16(dst), p.ohw);
          }
      });
    }
  }
}

// gy's images [n0, n0 + nc) of group gi as the [ocg, nc·OHW] bf16 matrix.
void gy_matrix(const u16* gy, u16* gym, int64_t n0, int64_t nc, int64_t gi, const Plan& p, const Conv2dGeom& g) {
  parallel_for(nc, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      for (int64_t o = 0; o < p.ocg; ++o)
        std::memcpy(gym + o * nc * p.ohw + i * p.ohw, gy + tensor_row(n0, i, gi, o, p, g), sizeof(u16) * p.ohw);
  });
}

void backward_input(const Tensor& gyt, const Tensor& wt, Tensor& gxt, const Conv2dGeom& g) {
  const u16* gy = reinterpret_cast<const u16*>(gyt.data<bf16>());
  const u16* w = reinterpret_cast<const u16*>(wt.data<bf16>());
  u16* gx = reinterpret_cast<u16*>(gxt.data<bf16>());
  const Plan p(g);
  thread_local AlignedBuffer<u16> gy_buf;
  thread_local AlignedBuffer<float> col_buf;
  u16* gym = gy_buf.reserve(static_cast<size_t>(p.ocg * p.chunk * p.ohw));
  float* col = col_buf.reserve(static_cast<size_t>(p.kk * p.chunk * p.ohw));
  const int64_t plane = p.cg * g.h * g.w;
  for (int64_t n0 = 0; n0 < g.n; n0 += p.chunk) {
    const int64_t nc = std::min(p.chunk, g.n - n0), ld = nc * p.ohw;
    for (int64_t gi = 0; gi < g.groups; ++gi) {
      gy_matrix(gy, gym, n0, nc, gi, p, g);
      // col = Wᵀ · gy ([kk, ocg] · [ocg, nc·ohw]) in f32, folded back image by image and rounded once.
      bf16_gemm_f32(p.kk, ld, p.ocg, w + gi * p.ocg * p.kk, p.kk, true, gym, ld, false, col, ld, false);
      parallel_for(nc, 1, [&](int64_t b, int64_t e) {
        thread_local AlignedBuffer<float> img_buf;
        float* img = img_buf.reserve(static_cast<size_t>(plane));
        for (int64_t i = b; i < e; ++i) {
          col2im(col + i * p.ohw, ld, img, p.cg, g);
          u16* dst = gx + ((n0 + i) * g.c + gi * p.cg) * g.h * g.w;
          bf16_narrow_cvtne(img, as_bf16(dst), plane);
        }
      });
    }
  }
}

void backward_weight(const Tensor& xt, const Tensor& gyt, Tensor& gwt, const Conv2dGeom& g) {
  const u16* x = reinterpret_cast<const u16*>(xt.data<bf16>());
  const u16* gy = reinterpret_cast<const u16*>(gyt.data<bf16>());
  u16* gw = reinterpret_cast<u16*>(gwt.data<bf16>());
  const Plan p(g);
  thread_local AlignedBuffer<u16> col_buf, gy_buf;
  thread_local AlignedBuffer<float> acc_buf;
  u16* col = col_buf.reserve(static_cast<size_t>(p.kk * p.chunk * p.ohw));
  u16* gym = gy_buf.reserve(static_cast<size_t>(p.ocg * p.chunk * p.ohw));
  const int64_t total = g.oc * p.kk;
  float* acc = acc_buf.reserve(static_cast<size_t>(total));
  std::fill(acc, acc + total, 0.0f);
  // Chunks in a fixed order, summed in f32: the result does not depend on the pool's schedule.
  for (int64_t n0 = 0; n0 < g.n; n0 += p.chunk) {
    const int64_t nc = std::min(p.chunk, g.n - n0), ld = nc * p.ohw;
    for (int64_t gi = 0; gi < g.groups; ++gi) {
      unfold(x, col, n0, nc, gi, p, g);
      gy_matrix(gy, gym, n0, nc, gi, p, g);
      // gw_g += gy · colᵀ ([ocg, nc·ohw] · [nc·ohw, kk])
      bf16_gemm_f32(p.ocg, p.kk, ld, gym, ld, false, col, ld, true, acc + gi * p.ocg * p.kk, p.kk, true);
    }
  }
  bf16_narrow_cvtne(acc, as_bf16(gw), total);
}

// Image by image (conv_by_images). The K pairs of the weight gradient's operands (output pixels)
// must be whole words for the word-transposing packs: columns and gy rows are laid out with an
// even stride, the odd pixel zero.
inline int64_t even(int64_t v) { return v + (v & 1); }

// A [rows, n] matrix with row stride ld ≥ n: `m` itself when ld = n, else copied into `buf` with
// the pixel past n zero.
const u16* with_stride(const u16* m, int64_t rows, int64_t n, int64_t ld, u16* buf) {
  if (ld == n) return m;
  for (int64_t r = 0; r < rows; ++r) {
    std::memcpy(buf + r * ld, m + r * n, sizeof(u16) * n);
    buf[r * ld + n] = 0;
  }
  return buf;
}

void forward_images(const u16* x, const u16* w, const u16* bias, u16* y, const Conv2dGeom& g) {
  const Plan p(g);
  image_parts(g.n, [&](int64_t, int64_t i0, int64_t i1) {
    thread_local AlignedBuffer<u16> col_buf;
    u16* col = col_buf.reserve(static_cast<size_t>(p.kk * p.ohw));
    for (int64_t i = i0; i < i1; ++i)
      for (int64_t gi = 0; gi < g.groups; ++gi) {
        const u16* xi = x + (i * g.c + gi * p.cg) * g.h * g.w;
        if (!pointwise(g)) im2col(xi, col, p.ohw, p.cg, g);
        u16* yi = y + (i * g.oc + gi * p.ocg) * p.ohw;
        const u16* bg = bias ? bias + gi * p.ocg : nullptr;
        bf16_gemm_tiles(p.ocg, p.ohw, p.kk, w + gi * p.ocg * p.kk, p.kk, false, pointwise(g) ? xi : col, p.ohw, false,
                        [&](int64_t r0, int64_t j0, int64_t rows, int64_t cols, const float* tile) {
                          for (int64_t r = 0; r < rows; ++r)
                            bf16_narrow_add_cvtne(tile + r * kBf16TileCols, bg ? widen(bg[r0 + r]) : 0.0f,
                                                  as_bf16(yi + (r0 + r) * p.ohw + j0), cols);
                        });
      }
  });
}

void backward_input_images(const u16* gy, const u16* w, u16* gx, const Conv2dGeom& g) {
  const Plan p(g);
  const int64_t plane = p.cg * g.h * g.w;
  image_parts(g.n, [&](int64_t, int64_t i0, int64_t i1) {
    thread_local AlignedBuffer<float> col_buf, img_buf;
    float* col = col_buf.reserve(static_cast<size_t>(p.kk * p.ohw));
    float* img = img_buf.reserve(static_cast<size_t>(plane));
    for (int64_t i = i0; i < i1; ++i)
      for (int64_t gi = 0; gi < g.groups; ++gi) {
        // col = Wᵀ · gy ([kk, ocg] · [ocg, OHW]) in f32, folded back into the image (for 1×1 it is
        // the image), rounded once.
        const u16* gyi = gy + (i * g.oc + gi * p.ocg) * p.ohw;
        bf16_gemm_f32(p.kk, p.ohw, p.ocg, w + gi * p.ocg * p.kk, p.kk, true, gyi, p.ohw, false, pointwise(g) ? img : col, p.ohw,
                      false);
        if (!pointwise(g)) col2im(col, p.ohw, img, p.cg, g);
        bf16_narrow_cvtne(img, as_bf16(gx + (i * g.c + gi * p.cg) * g.h * g.w), plane);
      }
  });
}

// gw = Σ_images gy · colᵀ, per part into its own f32 partial. When kk < ocg (a first layer: few
// input channels) the partial is gwᵀ = col · gyᵀ, so the longer side runs along the panels.
void backward_weight_images(const u16* x, const u16* gy, u16* gw, const Conv2dGeom& g) {
  const Plan p(g);
  const int64_t parts = std::min<int64_t>(g.n, num_threads()), size = g.groups * p.ocg * p.kk, ld = even(p.ohw);
  const bool transposed = p.kk < p.ocg;
  thread_local AlignedBuffer<float> part_buf;
  float* partials = part_buf.reserve(static_cast<size_t>(parts * size));
  image_parts(g.n, [&](int64_t t, int64_t i0, int64_t i1) {
    thread_local AlignedBuffer<u16> col_buf, gy_buf;
    u16* col = col_buf.reserve(static_cast<size_t>(p.kk * ld));
    u16* gym = gy_buf.reserve(static_cast<size_t>(p.ocg * ld));
    for (int64_t i = i0; i < i1; ++i)
      for (int64_t gi = 0; gi < g.groups; ++gi) {
        const u16* xi = x + (i * g.c + gi * p.cg) * g.h * g.w;
        const u16* cols = pointwise(g) ? with_stride(xi, p.kk, p.ohw, ld, col) : col;
        if (!pointwise(g)) {
          im2col(xi, col, ld, p.cg, g);
          if (ld != p.ohw)
            for (int64_t r = 0; r < p.kk; ++r) col[r * ld + p.ohw] = 0;
        }
        const u16* gyi = with_stride(gy + (i * g.oc + gi * p.ocg) * p.ohw, p.ocg, p.ohw, ld, gym);
        float* dst = partials + t * size + gi * p.ocg * p.kk;
        if (transposed)
          bf16_gemm_f32(p.kk, p.ocg, ld, cols, ld, false, gyi, ld, true, dst, p.ocg, i > i0);
        else
          bf16_gemm_f32(p.ocg, p.kk, ld, gyi, ld, false, cols, ld, true, dst, p.kk, i > i0);
      }
  });
  sum_partials(partials, parts, size, p.ocg, p.kk, transposed, [&](int64_t j, float acc) { gw[j] = bf16(acc).bits; });
}

void forward_cpu(const Tensor& xt, const Tensor& wt, const Tensor* bt, Tensor& yt, const Conv2dGeom& g) {
  if (!conv_by_images(g)) return forward(xt, wt, bt, yt, g);
  forward_images(reinterpret_cast<const u16*>(xt.data<bf16>()), reinterpret_cast<const u16*>(wt.data<bf16>()),
                 bt ? reinterpret_cast<const u16*>(bt->data<bf16>()) : nullptr, reinterpret_cast<u16*>(yt.data<bf16>()), g);
}
void backward_input_cpu(const Tensor& gyt, const Tensor& wt, Tensor& gxt, const Conv2dGeom& g) {
  if (!conv_by_images(g)) return backward_input(gyt, wt, gxt, g);
  backward_input_images(reinterpret_cast<const u16*>(gyt.data<bf16>()), reinterpret_cast<const u16*>(wt.data<bf16>()),
                        reinterpret_cast<u16*>(gxt.data<bf16>()), g);
}
void backward_weight_cpu(const Tensor& xt, const Tensor& gyt, Tensor& gwt, const Conv2dGeom& g) {
  if (!conv_by_images(g)) return backward_weight(xt, gyt, gwt, g);
  backward_weight_images(reinterpret_cast<const u16*>(xt.data<bf16>()), reinterpret_cast<const u16*>(gyt.data<bf16>()),
                         reinterpret_cast<u16*>(gwt.data<bf16>()), g);
}

}  // namespace

bool conv2d_bf16_available() { return bf16_gemm_available(); }

FLOCK_REGISTER_KERNEL(conv2d_forward_bf16, CPU, forward_cpu);
FLOCK_REGISTER_KERNEL(conv2d_backward_input_bf16, CPU, backward_input_cpu);
FLOCK_REGISTER_KERNEL(conv2d_backward_weight_bf16, CPU, backward_weight_cpu);

}  // namespace flock::cpu
