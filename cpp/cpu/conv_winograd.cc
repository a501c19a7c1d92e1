// Winograd F(2×2, 3×3) (Lavin & Gray, 2015) for f32 3×3 stride-1 convolutions. The output is cut
// into 2×2 tiles; each tile's 4×4 input patch d becomes V = Bᵀ·d·B, each 3×3 kernel k becomes
// U = G·k·Gᵀ, and the tile's output is Aᵀ·M·A where M[ξ] = Σ_c U[ξ]·V[ξ] for the 16 points ξ of the
// 4×4 domain. So the convolution is 16 GEMMs [OC, C] · [C, tiles] (2.25× fewer multiplications
// than im2col's [OC, 9C] · [9C, OH·OW]) between an input and an output transform.
//
// Images go in chunks: a chunk's tiles are transformed side by side, so each of the 16 GEMMs has
// every tile of the chunk as its columns (the packing of U is paid once per chunk), and the GEMMs
// run in parallel, one per pool task. The transforms walk rows of tiles, so their loads and stores
// are contiguous. The kernels are transformed once per call, in double, then rounded.
#include "conv_winograd.h"
#include <algorithm>
#include "gemm.h"
#include "scratch.h"
#include "threadpool.h"

namespace flock::cpu {
namespace {

// A 3×3 stride-1 convolution: input [n, c, h, w] padded by (ph, pw), output [n, oc, oh, ow].
struct Conv3x3 {
  int64_t n, c, h, w, oc, oh, ow, ph, pw;
};

// u = the 16 planes [oc, c] of G·k·Gᵀ, k(o, i) being the 3×3 kernel from input channel i to output o.
template <class KernelAt>
void transform_kernels(const Conv3x3& s, KernelAt at, float* u) {
  const int64_t plane = s.oc * s.c;
  for (int64_t o = 0; o < s.oc; ++o)
    for (int64_t i = 0; i < s.c; ++i) {
      double t[4][3];  // G·k
      for (int q = 0; q < 3; ++q) {
        const double k0 = at(o, i, 0, q), k1 = at(o, i, 1, q), k2 = at(o, i, 2, q);
        t[0][q] = k0;
        t[1][q] = 0.5 * (k0 + k1 + k2);
        t[2][q] = 0.5 * (k0 - k1 + k2);
        t[3][q] = k2;
      }
      float* dst = u + o * s.c + i;
      for (int r = 0; r < 4; ++r) {  // (G·k)·Gᵀ
        dst[(4 * r + 0) * plane] = static_cast<float>(t[r][0]);
        dst[(4 * r + 1) * plane] = static_cast<float>(0.5 * (t[r][0] + t[r][1] + t[r][2]));
        dst[(4 * r + 2) * plane] = static_cast<float>(0.5 * (t[r][0] - t[r][1] + t[r][2]));
        dst[(4 * r + 3) * plane] = static_cast<float>(t[r][2]);
      }
    }
}

// Where one chunk of images keeps its transformed inputs and outputs: point ξ's matrix for channel
// c starts at base + ξ·plane + c·ld, an image's tiles at column img·tiles, row-major within it.
struct Domain {
  float* base;
  int64_t ld, plane;
};

// Bᵀ·d·B of every tile of channel plane x ([h, w]) into the columns from `col` of channel ci.
void transform_input(const Conv3x3& s, const float* x, int64_t tiles_h, int64_t tiles_w, const Domain& v, int64_t ci,
                     int64_t col) {
  const int64_t wp = 2 * tiles_w + 2;  // the padded columns the tiles of a row read
  thread_local AlignedBuffer<float> rows_buf;
  float* d = rows_buf.reserve(static_cast<size_t>(8 * wp));
  float* b = d + 4 * wp;
  const int64_t x0 = std::max<int64_t>(0, s.pw), x1 = std::min(wp, s.w + s.pw);  // padded columns inside the image
  for (int64_t ty = 0; ty < tiles_h; ++ty) {
    for (int r = 0; r < 4; ++r) {
      float* row = d + r * wp;
      const int64_t y = 2 * ty - s.ph + r;
      std::fill(row, row + wp, 0.0f);
      if (y >= 0 && y < s.h && x1 > x0) std::copy(x + y * s.w + (x0 - s.pw), x + y * s.w + (x1 - s.pw), row + x0);
    }
    for (int64_t j = 0; j < wp; ++j) {  // Bᵀ·d down the columns
      b[j] = d[j] - d[2 * wp + j];
      b[wp + j] = d[wp + j] + d[2 * wp + j];
      b[2 * wp + j] = d[2 * wp + j] - d[wp + j];
      b[3 * wp + j] = d[wp + j] - d[3 * wp + j];
    }
    for (int r = 0; r < 4; ++r) {  // (Bᵀ·d)·B along each row, tile by tile
      const float* br = b + r * wp;
      float* o = v.base + 4 * r * v.plane + ci * v.ld + col + ty * tiles_w;
      for (int64_t t = 0; t < tiles_w; ++t) {
        o[t] = br[2 * t] - br[2 * t + 2];
        o[v.plane + t] = br[2 * t + 1] + br[2 * t + 2];
        o[2 * v.plane + t] = br[2 * t + 2] - br[2 * t + 1];
        o[3 * v.plane + t] = br[2 * t + 1] - br[2 * t + 3];
      }
    }
  }
}

// Aᵀ·M·A (+ bias) of every tile of output channel o, from the columns from `col`, into plane y ([oh, ow]).
void transform_output(const Conv3x3& s, const Domain& m, int64_t o, int64_t col, int64_t tiles_h, int64_t tiles_w, float bias,
                      float* y) {
  thread_local AlignedBuffer<float> rows_buf;
  float* r = rows_buf.reserve(static_cast<size_t>(10 * tiles_w));  // Aᵀ·M: 2 rows × 4 columns per tile, then 2 output rows
  float* out = r + 8 * tiles_w;
  for (int64_t ty = 0; ty < tiles_h; ++ty) {
    const float* src = m.base + o * m.ld + col + ty * tiles_w;
    for (int q = 0; q < 4; ++q) {  // Aᵀ·M down the columns
      const float *m0 = src + q * m.plane, *m1 = src + (4 + q) * m.plane, *m2 = src + (8 + q) * m.plane,
                  *m3 = src + (12 + q) * m.plane;
      float *r0 = r + q * tiles_w, *r1 = r + (4 + q) * tiles_w;
      for (int64_t t = 0; t < tiles_w; ++t) {
        r0[t] = m0[t] + m1[t] + m2[t];
        r1[t] = m1[t] - m2[t] - m3[t];
      }
    }
    for (int i = 0; i < 2 && 2 * ty + i < s.oh; ++i) {  // (Aᵀ·M)·A along each row, cropped at the right edge
      const float* ri = r + 4 * i * tiles_w;
      for (int64_t t = 0; t < tiles_w; ++t) {
        out[2 * t] = ri[t] + ri[tiles_w + t] + ri[2 * tiles_w + t] + bias;
        out[2 * t + 1] = ri[tiles_w + t] - ri[2 * tiles_w + t] - ri[3 * tiles_w + t] + bias;
      }
      std::copy(out, out + s.ow, y + (2 * ty + i) * s.ow);
    }
  }
}

// Chunks of images: each is transformed (in parallel over images × channels), multiplied point by
// point (16 GEMMs, in parallel), and transformed back (images × output channels). A chunk's
// transformed inputs and outputs take at most kChunkBytes.
constexpr int64_t kChunkBytes = int64_t(32) << 20;

void convolve(const Conv3x3& s, const float* x, const float* u, const float* bias, float* y) {
  const int64_t tiles_h = (s.oh + 1) / 2, tiles_w = (s.ow + 1) / 2, tiles = tiles_h * tiles_w;
  if (s.n == 0 || tiles == 0) return;
  const int64_t per_image = 16 * (s.c + s.oc) * tiles * int64_t(sizeof(float));
  const int64_t chunk = std::clamp<int64_t>(kChunkBytes / std::max<int64_t>(1, per_image), 1, s.n);
  thread_local AlignedBuffer<float> v_buf, m_buf;
  float* vb = v_buf.reserve(static_cast<size_t>(16 * s.c * chunk * tiles));
  float* mb = m_buf.reserve(static_cast<size_t>(16 * s.oc * chunk * tiles));
  for (int64_t n0 = 0; n0 < s.n; n0 += chunk) {
    const int64_t nc = std::min(chunk, s.n - n0), ld = nc * tiles;
    const Domain v{vb, ld, s.c * ld}, m{mb, ld, s.oc * ld};
    parallel_for(nc * s.c, 1, [&](int64_t b0, int64_t b1) {
      for (int64_t j = b0; j < b1; ++j)
        transform_input(s, x + ((n0 + j / s.c) * s.c + j % s.c) * s.h * s.w, tiles_h, tiles_w, v, j % s.c, j / s.c * tiles);
    });
    parallel_for(16, 1, [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p)
        sgemm_serial(s.oc, ld, s.c, u + p * s.oc * s.c, s.c, false, v.base + p * v.plane, ld, false, m.base + p * m.plane, ld,
                     false);
    });
    parallel_for(nc * s.oc, 1, [&](int64_t b0, int64_t b1) {
      for (int64_t j = b0; j < b1; ++j) {
        const int64_t img = j / s.oc, o = j % s.oc;
        transform_output(s, m, o, img * tiles, tiles_h, tiles_w, bias ? bias[o] : 0.0f,
                         y + ((n0 + img) * s.oc + o) * s.oh * s.ow);
      }
    });
  }
}

}  // namespace

bool winograd_applies(const Conv2dGeom& g) {
  return g.groups == 1 && g.kh == 3 && g.kw == 3 && g.sh == 1 && g.sw == 1 && g.dh == 1 && g.dw == 1 && g.ph <= 2 && g.pw <= 2;
}

void winograd_forward(const float* x, const float* w, const float* bias, float* y, const Conv2dGeom& g) {
  const Conv3x3 s{g.n, g.c, g.h, g.w, g.oc, g.oh, g.ow, g.ph, g.pw};
  thread_local AlignedBuffer<float> u_buf;
  float* u = u_buf.reserve(static_cast<size_t>(16 * g.oc * g.c));
  transform_kernels(
      s, [&](int64_t o, int64_t i, int r, int q) { return w[(o * g.c + i) * 9 + r * 3 + q]; }, u);
  convolve(s, x, u, bias, y);
}

void winograd_backward_input(const float* gy, const float* w, float* gx, const Conv2dGeom& g) {
  // gx[c] = Σ_o gy[o] ⋆ flip(w[o, c]) with padding 2 − p: a forward convolution from OC to C channels.
  const Conv3x3 s{g.n, g.oc, g.oh, g.ow, g.c, g.h, g.w, 2 - g.ph, 2 - g.pw};
  thread_local AlignedBuffer<float> u_buf;
  float* u = u_buf.reserve(static_cast<size_t>(16 * g.oc * g.c));
  transform_kernels(
      s, [&](int64_t c, int64_t o, int r, int q) { return w[(o * g.c + c) * 9 + (2 - r) * 3 + (2 - q)]; }, u);
  convolve(s, gy, u, nullptr, gx);
}

}  // namespace flock::cpu
