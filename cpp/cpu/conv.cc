// CPU 2-D convolution, f32 forward and input gradient of 3×3 stride-1 layers with enough channels by
// Winograd F(2×2, 3×3) (conv_winograd.cc), everything else by im2col + GEMM in one of two ways
// chosen per shape:
// - image by image (f32, at least one image per pool thread, see use_images): each thread takes a
//   fixed range of images and unfolds one image of a group at a time into its own cache-resident
//   column buffer ([C/g·KH·KW, OH·OW]; a 1×1 stride-1 kernel reads the image itself), then runs a
//   serial GEMM straight into the output (the bias written first and accumulated onto), into the
//   input gradient through col2im, or into its own weight-gradient partial (partials summed in a
//   fixed order). No batch-wide column matrix and no layout copies.
// - batched (f64, and batches too small to give every thread an image): a chunk of images is
//   unfolded side by side into one [C/g·KH·KW, images·OH·OW] column matrix, so each group costs one
//   large GEMM per chunk, which splits itself over the pool. Chunks bound the column matrix to
//   kColumnBytes. Unfolding, folding and the layout copies run image-parallel.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>
#include "../nn_kernels.h"
#include "conv_winograd.h"
#include "gemm.h"
#include "im2col.h"
#include "scratch.h"
#include "threadpool.h"

namespace flock::cpu {
namespace {

constexpr int64_t kColumnBytes = int64_t(32) << 20;

inline void gemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, bool ta, const float* b, int64_t ldb, bool tb,
                 float* c, int64_t ldc) {
  sgemm(m, n, k, a, lda, ta, b, ldb, tb, c, ldc);
}
inline void gemm(int64_t m, int64_t n, int64_t k, const double* a, int64_t lda, bool ta, const double* b, int64_t ldb, bool tb,
                 double* c, int64_t ldc) {
  dgemm(m, n, k, a, lda, ta, b, ldb, tb, c, ldc);
}

// Sizes shared by the three kernels: per group cg input and ocg output channels, kk = cg·KH·KW
// rows of the column matrix, ohw output pixels per image, `chunk` images per GEMM.
struct Plan {
  int64_t cg, ocg, kk, ohw, chunk;
  template <class T>
  static Plan of(const Conv2dGeom& g) {
    Plan p{g.c / g.groups, g.oc / g.groups, 0, g.oh * g.ow, 1};
    p.kk = p.cg * g.kh * g.kw;
    const int64_t per_image = std::max<int64_t>(1, p.kk * p.ohw * static_cast<int64_t>(sizeof(T)));
    p.chunk = std::clamp<int64_t>(kColumnBytes / per_image, 1, std::max<int64_t>(1, g.n));
    return p;
  }
};

// The [ocg, nc·OHW] matrix the GEMMs use (output channels by image pixels) and images
// [n0, n0 + nc) of group gi of an [N, OC, OHW] tensor: calls row(t, m) with the offsets of each
// channel-image row in the tensor and in the matrix, image-parallel.
template <class Row>
void for_each_row(int64_t n0, int64_t nc, int64_t gi, const Plan& p, const Conv2dGeom& g, Row row) {
  parallel_for(nc, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      for (int64_t o = 0; o < p.ocg; ++o) row(((n0 + i) * g.oc + gi * p.ocg + o) * p.ohw, o * nc * p.ohw + i * p.ohw, o);
  });
}

template <class T>
void to_matrix(const T* tensor, T* mat, int64_t n0, int64_t nc, int64_t gi, const Plan& p, const Conv2dGeom& g) {
  for_each_row(n0, nc, gi, p, g, [&](int64_t t, int64_t m, int64_t) { std::memcpy(mat + m, tensor + t, sizeof(T) * p.ohw); });
}

// The way back, adding the group's bias (when given) while each row is in cache.
template <class T>
void from_matrix(const T* mat, T* tensor, const T* bias, int64_t n0, int64_t nc, int64_t gi, const Plan& p, const Conv2dGeom& g) {
  for_each_row(n0, nc, gi, p, g, [&](int64_t t, int64_t m, int64_t o) {
    if (!bias) return static_cast<void>(std::memcpy(tensor + t, mat + m, sizeof(T) * p.ohw));
    const T v = bias[gi * p.ocg + o];
    for (int64_t k = 0; k < p.ohw; ++k) tensor[t + k] = mat[m + k] + v;
  });
}

// Unfolds images [n0, n0 + nc) of group gi into `col` ([kk, nc·OHW]), one image per task.
template <class T>
void unfold(const T* x, T* col, int64_t n0, int64_t nc, int64_t gi, const Plan& p, const Conv2dGeom& g) {
  parallel_for(nc, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) im2col(x + ((n0 + i) * g.c + gi * p.cg) * g.h * g.w, col + i * p.ohw, nc * p.ohw, p.cg, g);
  });
}

template <class T>
void forward_typed(const Tensor& xt, const Tensor& wt, const Tensor* bt, Tensor& yt, const Conv2dGeom& g) {
  const T* bias = bt ? bt->data<T>() : nullptr;
  const T* x = xt.data<T>();
  const T* w = wt.data<T>();
  T* y = yt.data<T>();
  const Plan p = Plan::of<T>(g);
  thread_local AlignedBuffer<T> col_buf, out_buf;
  T* col = col_buf.reserve(static_cast<size_t>(p.kk * p.chunk * p.ohw));
  T* out = out_buf.reserve(static_cast<size_t>(p.ocg * p.chunk * p.ohw));
  for (int64_t n0 = 0; n0 < g.n; n0 += p.chunk) {
    const int64_t nc = std::min(p.chunk, g.n - n0), ld = nc * p.ohw;
    for (int64_t gi = 0; gi < g.groups; ++gi) {
      unfold(x, col, n0, nc, gi, p, g);
      gemm(p.ocg, ld, p.kk, w + gi * p.ocg * p.kk, p.kk, false, col, ld, false, out, ld);
      from_matrix(out, y, bias, n0, nc, gi, p, g);
    }
  }
}

template <class T>
void backward_input_typed(const Tensor& gyt, const Tensor& wt, Tensor& gxt, const Conv2dGeom& g) {
  const T* gy = gyt.data<T>();
  const T* w = wt.data<T>();
  T* gx = gxt.data<T>();
  const Plan p = Plan::of<T>(g);
  thread_local AlignedBuffer<T> col_buf, gy_buf;
  T* col = col_buf.reserve(static_cast<size_t>(p.kk * p.chunk * p.ohw));
  T* gym = gy_buf.reserve(static_cast<size_t>(p.ocg * p.chunk * p.ohw));
  for (int64_t n0 = 0; n0 < g.n; n0 += p.chunk) {
    const int64_t nc = std::min(p.chunk, g.n - n0), ld = nc * p.ohw;
    for (int64_t gi = 0; gi < g.groups; ++gi) {
      to_matrix(gy, gym, n0, nc, gi, p, g);
      // col = Wᵀ · gy  ([kk, ocg] · [ocg, nc·ohw]), then folded back image by image
      gemm(p.kk, ld, p.ocg, w + gi * p.ocg * p.kk, p.kk, true, gym, ld, false, col, ld);
      parallel_for(nc, 1, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) col2im(col + i * p.ohw, ld, gx + ((n0 + i) * g.c + gi * p.cg) * g.h * g.w, p.cg, g);
      });
    }
  }
}

template <class T>
void backward_weight_typed(const Tensor& xt, const Tensor& gyt, Tensor& gwt, const Conv2dGeom& g) {
  const T* x = xt.data<T>();
  const T* gy = gyt.data<T>();
  T* gw = gwt.data<T>();
  const Plan p = Plan::of<T>(g);
  thread_local AlignedBuffer<T> col_buf, gy_buf, part_buf;
  T* col = col_buf.reserve(static_cast<size_t>(p.kk * p.chunk * p.ohw));
  T* gym = gy_buf.reserve(static_cast<size_t>(p.ocg * p.chunk * p.ohw));
  T* part = part_buf.reserve(static_cast<size_t>(p.ocg * p.kk));
  // Chunks in a fixed order, each GEMM's sums in a fixed order: the result does not depend on
  // how the pool schedules work.
  for (int64_t n0 = 0; n0 < g.n; n0 += p.chunk) {
    const int64_t nc = std::min(p.chunk, g.n - n0), ld = nc * p.ohw;
    for (int64_t gi = 0; gi < g.groups; ++gi) {
      unfold(x, col, n0, nc, gi, p, g);
      to_matrix(gy, gym, n0, nc, gi, p, g);
      T* dst = gw + gi * p.ocg * p.kk;
      // gw_g (+)= gy · colᵀ  ([ocg, nc·ohw] · [nc·ohw, kk])
      gemm(p.ocg, p.kk, ld, gym, ld, false, col, ld, true, n0 == 0 ? dst : part, p.kk);
      if (n0 > 0)
        for (int64_t i = 0; i < p.ocg * p.kk; ++i) dst[i] += part[i];
    }
  }
}

// Image-by-image path (f32). Images [n·t/parts, n·(t+1)/parts) go to part t.
// FLOCKML_CONV_ALGO=images|batched|winograd forces one path where it applies (benchmarks, tests);
// where winograd does not apply (not 3×3 stride 1, the weight gradient) the automatic choice stands.
enum class Algo { automatic, images, batched, winograd };
Algo forced_algo() {
  static const Algo algo = [] {
    const char* v = std::getenv("FLOCKML_CONV_ALGO");
    const std::string s = v ? v : "";
    if (s == "images") return Algo::images;
    if (s == "batched") return Algo::batched;
    if (s == "winograd") return Algo::winograd;
    if (!s.empty() && s != "auto")
      fail(Code::Arg, "conv2d: FLOCKML_CONV_ALGO=", s, " is not one of auto, images, batched, winograd");
    return Algo::automatic;
  }();
  return algo;
}
bool use_images(const Conv2dGeom& g) {
  const Algo algo = forced_algo();
  if (algo == Algo::images || algo == Algo::batched) return algo == Algo::images;
  return g.n >= num_threads() && g.oh * g.ow >= 16;
}
// Winograd pays for its transforms only when the GEMMs are wide: at least 64 channels on each side.
// bench/conv.ts on this project's 2-core AVX-512 machine: 128 → 128 channels at 14×14 took 0.85× the
// image-by-image time forward and 0.63× for the input gradient; the Fashion-MNIST CNN's 32 → 64 at
// 13×13 took 1.5× for both.
bool use_winograd(const Conv2dGeom& g) {
  const Algo algo = forced_algo();
  if (!winograd_applies(g) || algo == Algo::images || algo == Algo::batched) return false;
  return algo == Algo::winograd || (g.c >= 64 && g.oc >= 64);
}

// The [kk, OHW] columns of image plane x (group channels): x itself for a 1×1 stride-1 unpadded kernel.
const float* columns(const float* x, float* col, const Plan& p, const Conv2dGeom& g) {
  if (pointwise(g)) return x;
  im2col(x, col, p.ohw, p.cg, g);
  return col;
}

void forward_images(const float* x, const float* w, const float* bias, float* y, const Conv2dGeom& g) {
  const Plan p = Plan::of<float>(g);
  image_parts(g.n, [&](int64_t, int64_t i0, int64_t i1) {
    thread_local AlignedBuffer<float> col_buf;
    float* col = col_buf.reserve(static_cast<size_t>(p.kk * p.ohw));
    for (int64_t i = i0; i < i1; ++i)
      for (int64_t gi = 0; gi < g.groups; ++gi) {
        float* yi = y + (i * g.oc + gi * p.ocg) * p.ohw;
        if (bias)
          for (int64_t o = 0; o < p.ocg; ++o) std::fill(yi + o * p.ohw, yi + (o + 1) * p.ohw, bias[gi * p.ocg + o]);
        const float* b = columns(x + (i * g.c + gi * p.cg) * g.h * g.w, col, p, g);
        sgemm_serial(p.ocg, p.ohw, p.kk, w + gi * p.ocg * p.kk, p.kk, false, b, p.ohw, false, yi, p.ohw, bias != nullptr);
      }
  });
}

void backward_input_images(const float* gy, const float* w, float* gx, const Conv2dGeom& g) {
  const Plan p = Plan::of<float>(g);
  const bool direct = pointwise(g);
  image_parts(g.n, [&](int64_t, int64_t i0, int64_t i1) {
    thread_local AlignedBuffer<float> col_buf;
    float* col = col_buf.reserve(static_cast<size_t>(p.kk * p.ohw));
    for (int64_t i = i0; i < i1; ++i)
      for (int64_t gi = 0; gi < g.groups; ++gi) {
        // col = Wᵀ · gy ([kk, ocg] · [ocg, OHW]), folded back into the image (or written there for 1×1)
        float* gxi = gx + (i * g.c + gi * p.cg) * g.h * g.w;
        const float* gyi = gy + (i * g.oc + gi * p.ocg) * p.ohw;
        sgemm_serial(p.kk, p.ohw, p.ocg, w + gi * p.ocg * p.kk, p.kk, true, gyi, p.ohw, false, direct ? gxi : col, p.ohw, false);
        if (!direct) col2im(col, p.ohw, gxi, p.cg, g);
      }
  });
}

// gw = Σ_images gy · colᵀ, per part into its own partial. When kk < ocg (a first layer: few input
// channels) the partial is gwᵀ = col · gyᵀ, so the longer side runs along the micro-kernel's columns.
void backward_weight_images(const float* x, const float* gy, float* gw, const Conv2dGeom& g) {
  const Plan p = Plan::of<float>(g);
  const int64_t parts = std::min<int64_t>(g.n, num_threads()), size = g.groups * p.ocg * p.kk;
  const bool transposed = p.kk < p.ocg;
  thread_local AlignedBuffer<float> part_buf;
  float* partials = part_buf.reserve(static_cast<size_t>(parts * size));
  image_parts(g.n, [&](int64_t t, int64_t i0, int64_t i1) {
    thread_local AlignedBuffer<float> col_buf;
    float* col = col_buf.reserve(static_cast<size_t>(p.kk * p.ohw));
    for (int64_t i = i0; i < i1; ++i)
      for (int64_t gi = 0; gi < g.groups; ++gi) {
        float* dst = partials + t * size + gi * p.ocg * p.kk;
        const float* b = columns(x + (i * g.c + gi * p.cg) * g.h * g.w, col, p, g);
        const float* gyi = gy + (i * g.oc + gi * p.ocg) * p.ohw;
        if (transposed)
          sgemm_serial(p.kk, p.ocg, p.ohw, b, p.ohw, false, gyi, p.ohw, true, dst, p.ocg, i > i0);
        else
          sgemm_serial(p.ocg, p.kk, p.ohw, gyi, p.ohw, false, b, p.ohw, true, dst, p.kk, i > i0);
      }
  });
  sum_partials(partials, parts, size, p.ocg, p.kk, transposed, [&](int64_t j, float acc) { gw[j] = acc; });
}

void conv2d_forward_cpu(const Tensor& x, const Tensor& w, const Tensor* b, Tensor& y, const Conv2dGeom& g) {
  if (x.dtype == DType::f64)
    forward_typed<double>(x, w, b, y, g);
  else if (use_winograd(g))
    winograd_forward(x.data<float>(), w.data<float>(), b ? b->data<float>() : nullptr, y.data<float>(), g);
  else if (use_images(g))
    forward_images(x.data<float>(), w.data<float>(), b ? b->data<float>() : nullptr, y.data<float>(), g);
  else
    forward_typed<float>(x, w, b, y, g);
}
void conv2d_backward_input_cpu(const Tensor& gy, const Tensor& w, Tensor& gx, const Conv2dGeom& g) {
  if (gy.dtype == DType::f64)
    backward_input_typed<double>(gy, w, gx, g);
  else if (use_winograd(g))
    winograd_backward_input(gy.data<float>(), w.data<float>(), gx.data<float>(), g);
  else if (use_images(g))
    backward_input_images(gy.data<float>(), w.data<float>(), gx.data<float>(), g);
  else
    backward_input_typed<float>(gy, w, gx, g);
}
void conv2d_backward_weight_cpu(const Tensor& x, const Tensor& gy, Tensor& gw, const Conv2dGeom& g) {
  if (x.dtype == DType::f64)
    backward_weight_typed<double>(x, gy, gw, g);
  else if (use_images(g))
    backward_weight_images(x.data<float>(), gy.data<float>(), gw.data<float>(), g);
  else
    backward_weight_typed<float>(x, gy, gw, g);
}

}  // namespace

bool conv_by_images(const Conv2dGeom& g) { return use_images(g); }

FLOCK_REGISTER_KERNEL(conv2d_forward, CPU, conv2d_forward_cpu);
FLOCK_REGISTER_KERNEL(conv2d_backward_input, CPU, conv2d_backward_input_cpu);
FLOCK_REGISTER_KERNEL(conv2d_backward_weight, CPU, conv2d_backward_weight_cpu);

}  // namespace flock::cpu
