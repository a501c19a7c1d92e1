// CPU 2-D pooling. Max pooling records the flat argmax (within the H·W plane, as PyTorch) so
// backward is a scatter; average pooling (fixed windows or adaptive ones) spreads the gradient
// evenly over each window. Planes (n, c) run in parallel. bf16 and f16 planes are pooled in place,
// compared and summed in f32: a maximum is the input's own value, a gradient plane is summed in f32
// and rounded once, an average rounded once — what widening the tensor to f32 and back gives, with
// none of its passes over memory.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <immintrin.h>
#include <limits>
#include <type_traits>
#include <vector>
#include "../nn_kernels.h"
#include "bf16_vec.h"
#include "isa.h"
#include "threadpool.h"

namespace flock::cpu {
namespace {

// mask ? a : b for an all-ones or all-zeros mask, on the bits.
template <class T>
inline T select_bits(int64_t mask, T a, T b) {
  using U = std::conditional_t<sizeof(T) == 8, uint64_t, uint32_t>;
  U ua, ub;
  std::memcpy(&ua, &a, sizeof(T));
  std::memcpy(&ub, &b, sizeof(T));
  const U r = (ua & static_cast<U>(mask)) | (ub & ~static_cast<U>(mask));
  T out;
  std::memcpy(&out, &r, sizeof(T));
  return out;
}

// Max pooling of one plane whose windows all lie inside it (KH_/KW_: compile-time window size,
// 0 for a run-time one). A NaN is taken and then kept (v > NaN is false), as in PyTorch; the first
// element compared with itself changes nothing. Selected through masks: the comparison is unpredictable
// on real activations, and written as ?: the compiler makes it a branch that mispredicts half
// the time (5x slower here). The output is the input at the argmax, its own bits.
template <class T, int KH_, int KW_>
void max_plane_inside(const T* plane, T* yp, int64_t* ip, int64_t W, int64_t OH, int64_t OW, int64_t SH, int64_t SW, int64_t kh,
                      int64_t kw) {
  using A = acc_t<T>;
  const int64_t KH = KH_ ? KH_ : kh, KW = KW_ ? KW_ : kw;
  for (int64_t oy = 0; oy < OH; ++oy) {
    for (int64_t ox = 0; ox < OW; ++ox) {
      const int64_t start = oy * SH * W + ox * SW;
      A best = A(plane[start]);
      int64_t at = start;
      for (int64_t i = 0; i < KH; ++i) {
        for (int64_t j = 0; j < KW; ++j) {
          const int64_t pos = start + i * W + j;
          const A v = A(plane[pos]);
          const int64_t take = -static_cast<int64_t>((v > best) | (v != v));  // `|`, not `||`: no branch
          best = select_bits(take, v, best);
          at = (take & pos) | (~take & at);
        }
      }
      yp[oy * OW + ox] = plane[at];
      ip[oy * OW + ox] = at;
    }
  }
}

// The 2×2 stride-2 pool of one plane (f32, without AVX-512), one output row at a time: the loop
// body is written without branches so the compiler vectorises it, and it is compiled once per
// instruction set (the wrappers below), inlined into each; cpu_isa() picks one at run time. Same
// order and NaN rule as max_plane_inside.
inline void max2x2_rows(const float* plane, float* yp, int64_t* ip, int64_t W, int64_t OH, int64_t OW) {
  for (int64_t oy = 0; oy < OH; ++oy) {
    const float* r0 = plane + 2 * oy * W;
    const float* r1 = r0 + W;
    float* yr = yp + oy * OW;
    int64_t* ir = ip + oy * OW;
    const int64_t base = 2 * oy * W;
    for (int64_t ox = 0; ox < OW; ++ox) {
      const float a = r0[2 * ox], b = r0[2 * ox + 1], c = r1[2 * ox], d = r1[2 * ox + 1];
      const int64_t pos = base + 2 * ox;
      float best = a;
      int64_t at = pos;
      bool take = (b > best) | (b != b);
      best = take ? b : best;
      at = take ? pos + 1 : at;
      take = (c > best) | (c != c);
      best = take ? c : best;
      at = take ? pos + W : at;
      take = (d > best) | (d != d);
      best = take ? d : best;
      at = take ? pos + W + 1 : at;
      yr[ox] = best;
      ir[ox] = at;
    }
  }
}

__attribute__((target("avx2,fma"))) void max2x2_avx2(const float* plane, float* yp, int64_t* ip, int64_t W, int64_t OH,
                                                     int64_t OW) {
  max2x2_rows(plane, yp, ip, W, OH, OW);
}
void max2x2_generic(const float* plane, float* yp, int64_t* ip, int64_t W, int64_t OH, int64_t OW) {
  max2x2_rows(plane, yp, ip, W, OH, OW);
}

// Inputs 2·ox … 2·ox + 2·count − 1 of a row as its even and odd columns, in f32 (a function, not
// a lambda: lambdas do not take the target attribute).
template <class T>
__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl"))) inline void split_columns(const T* row, int64_t count, __m512& even,
                                                                                        __m512& odd) {
  const __mmask16 all = 0xFFFF;
  const __m512i lanes = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  if constexpr (std::is_same_v<T, float>) {
    const __mmask16 m0 = count >= 8 ? all : static_cast<__mmask16>((1u << (2 * count)) - 1);
    const __mmask16 m1 = count >= 16 ? all : count <= 8 ? 0 : static_cast<__mmask16>((1u << (2 * count - 16)) - 1);
    const __m512 lo = _mm512_maskz_loadu_ps(m0, row), hi = _mm512_maskz_loadu_ps(m1, row + 16);
    even = _mm512_permutex2var_ps(lo, lanes, hi);
    odd = _mm512_permutex2var_ps(lo, _mm512_add_epi32(lanes, _mm512_set1_epi32(1)), hi);
  } else {
    const __mmask16 keep = count >= 16 ? all : static_cast<__mmask16>((1u << count) - 1);
    const __m512i words = _mm512_maskz_loadu_epi32(keep, row);
    even = _mm512_castsi512_ps(_mm512_maskz_slli_epi32(all, words, 16));
    odd = _mm512_castsi512_ps(_mm512_and_si512(words, _mm512_set1_epi32(static_cast<int>(0xFFFF0000u))));
  }
}

// The 2×2 stride-2 pool of an f32 or bf16 plane on AVX-512, 16 outputs at a time (a row's last ones
// under a mask). f32: two loads of 16 inputs per row, split into even and odd columns by permutes;
// bf16: one load per row, each 32-bit word an even and an odd input, widened to f32 by a shift and a
// mask. The maximum's bits are the input's own. Offsets run in 32 bits (the caller checks the
// plane fits). Same order and NaN rule as max_plane_inside.
template <class T>
__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl"))) void max2x2_masked(const T* plane, T* yp, int64_t* ip, int64_t W,
                                                                                 int64_t OH, int64_t OW) {
  const __m512i lanes = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i one = _mm512_set1_epi32(1), down = _mm512_set1_epi32(static_cast<int>(W)),
                diag = _mm512_set1_epi32(static_cast<int>(W + 1));
  const __mmask16 all = 0xFFFF;  // the masked forms: GCC 12 warns on the unmasked ones' undefined source
  for (int64_t oy = 0; oy < OH; ++oy) {
    const T* r0 = plane + 2 * oy * W;
    const T* r1 = r0 + W;
    for (int64_t ox = 0; ox < OW; ox += 16) {
      const int64_t count = std::min<int64_t>(16, OW - ox);
      const __mmask16 keep = count == 16 ? all : static_cast<__mmask16>((1u << count) - 1);
      __m512 a, b, c, d;
      split_columns(r0 + 2 * ox, count, a, b);
      split_columns(r1 + 2 * ox, count, c, d);
      const __m512i pos = _mm512_add_epi32(_mm512_set1_epi32(static_cast<int>(2 * oy * W + 2 * ox)), lanes);
      __m512 best = a;
      __m512i at = pos;
      __mmask16 take = _mm512_cmp_ps_mask(b, best, _CMP_GT_OQ) | _mm512_cmp_ps_mask(b, b, _CMP_UNORD_Q);
      best = _mm512_mask_mov_ps(best, take, b);
      at = _mm512_mask_add_epi32(at, take, pos, one);
      take = _mm512_cmp_ps_mask(c, best, _CMP_GT_OQ) | _mm512_cmp_ps_mask(c, c, _CMP_UNORD_Q);
      best = _mm512_mask_mov_ps(best, take, c);
      at = _mm512_mask_add_epi32(at, take, pos, down);
      take = _mm512_cmp_ps_mask(d, best, _CMP_GT_OQ) | _mm512_cmp_ps_mask(d, d, _CMP_UNORD_Q);
      best = _mm512_mask_mov_ps(best, take, d);
      at = _mm512_mask_add_epi32(at, take, pos, diag);
      if constexpr (std::is_same_v<T, float>)
        _mm512_mask_storeu_ps(yp + oy * OW + ox, keep, best);
      else
        _mm512_mask_cvtepi32_storeu_epi16(yp + oy * OW + ox, keep, _mm512_maskz_srli_epi32(all, _mm512_castps_si512(best), 16));
      alignas(64) int32_t at32[16];
      _mm512_store_si512(at32, at);
      int64_t* ir = ip + oy * OW + ox;
      if (count == 16)
        for (int k = 0; k < 16; ++k) ir[k] = at32[k];
      else
        for (int64_t k = 0; k < count; ++k) ir[k] = at32[k];
    }
  }
}

// The 2×2 stride-2 kernel for this CPU: f32 on every instruction set, bf16 on AVX-512 only (null
// elsewhere: the general loop runs).
template <class T>
using Max2x2 = void (*)(const T*, T*, int64_t*, int64_t, int64_t, int64_t);
template <class T>
Max2x2<T> max2x2_kernel() {
  if constexpr (std::is_same_v<T, bf16>) {
    return cpu_isa() == Isa::avx512 ? max2x2_masked<bf16> : nullptr;
  } else {
    switch (cpu_isa()) {
      case Isa::avx512:
        return max2x2_masked<float>;
      case Isa::avx2:
        return max2x2_avx2;
      case Isa::generic:
        break;
    }
    return max2x2_generic;
  }
}

template <class T>
void max_forward(const Tensor& xt, Tensor& yt, Tensor& it, const Pool2dGeom& geom) {
  // Geometry in locals: stores through y/idx could otherwise alias the struct and force reloads.
  const int64_t H = geom.h, W = geom.w, OH = geom.oh, OW = geom.ow, KH = geom.kh, KW = geom.kw;
  const int64_t SH = geom.sh, SW = geom.sw, PH = geom.ph, PW = geom.pw, DH = geom.dh, DW = geom.dw;
  const T* x = xt.data<T>();
  T* y = yt.data<T>();
  int64_t* idx = it.data<int64_t>();
  // Every window inside the input (no padding, no dilation, no ceil-mode overhang: the usual
  // pooling layer): no bounds checks, and every window has a first element.
  const bool inside = PH == 0 && PW == 0 && DH == 1 && DW == 1 && (OH - 1) * SH + KH <= H && (OW - 1) * SW + KW <= W;
  constexpr bool kFast = std::is_same_v<T, float> || std::is_same_v<T, bf16>;
  Max2x2<T> max2x2 = nullptr;
  if constexpr (kFast)
    if (inside && KH == 2 && KW == 2 && SH == 2 && SW == 2 && H * W < (int64_t(1) << 31)) max2x2 = max2x2_kernel<T>();
  parallel_for(geom.n * geom.c, 4, [=](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) {
      const T* plane = x + p * H * W;
      T* yp = y + p * OH * OW;
      int64_t* ip = idx + p * OH * OW;
      if constexpr (kFast) {
        if (max2x2) {
          max2x2(plane, yp, ip, W, OH, OW);
          continue;
        }
      }
      if (inside) {
        // Window sizes known at compile time for the usual 2×2 and 3×3 pools (unrolled).
        if (KH == 2 && KW == 2)
          max_plane_inside<T, 2, 2>(plane, yp, ip, W, OH, OW, SH, SW, KH, KW);
        else if (KH == 3 && KW == 3)
          max_plane_inside<T, 3, 3>(plane, yp, ip, W, OH, OW, SH, SW, KH, KW);
        else
          max_plane_inside<T, 0, 0>(plane, yp, ip, W, OH, OW, SH, SW, KH, KW);
        continue;
      }
      for (int64_t oy = 0; oy < OH; ++oy) {
        const int64_t y0 = oy * SH - PH;
        for (int64_t ox = 0; ox < OW; ++ox) {
          const int64_t x0 = ox * SW - PW;
          acc_t<T> best = -std::numeric_limits<acc_t<T>>::infinity();
          int64_t at = -1, first = -1;
          for (int64_t i = 0; i < KH; ++i) {
            const int64_t iy = y0 + i * DH;
            if (iy < 0 || iy >= H) continue;
            const T* row = plane + iy * W;
            for (int64_t j = 0; j < KW; ++j) {
              const int64_t ix = x0 + j * DW;
              if (ix < 0 || ix >= W) continue;
              const acc_t<T> v = acc_t<T>(row[ix]);
              const int64_t pos = iy * W + ix;
              if (first < 0) first = pos;
              // Branch-free select (conditional moves): on real activations the comparison is
              // unpredictable. A NaN is taken and then kept (v > NaN is false), as in PyTorch.
              const bool take = (v > best) | (v != v);
              best = take ? v : best;
              at = take ? pos : at;
            }
          }
          if (at < 0) at = first;  // a window of -inf values points at its first element
          yp[oy * OW + ox] = plane[at];
          ip[oy * OW + ox] = at;
        }
      }
    }
  });
}

// Gradient planes of 16-bit floats are summed in an f32 plane per thread and rounded once.
template <class T, class Body>
void per_grad_plane(T* gx, const Pool2dGeom& g, Body body) {
  const bool cvtne = cpu_bf16_convert();
  parallel_for(g.n * g.c, 4, [&](int64_t b, int64_t e) {
    thread_local std::vector<float> wide;
    for (int64_t p = b; p < e; ++p) {
      T* plane = gx + p * g.h * g.w;
      if constexpr (std::is_same_v<T, acc_t<T>>) {
        std::fill(plane, plane + g.h * g.w, T(0));
        body(p, plane);
      } else {
        wide.assign(static_cast<size_t>(g.h * g.w), 0.0f);
        body(p, wide.data());
        if constexpr (std::is_same_v<T, bf16>)
          bf16_store(wide.data(), plane, g.h * g.w, cvtne);
        else
          for (int64_t k = 0; k < g.h * g.w; ++k) plane[k] = T(wide[k]);
      }
    }
  });
}

template <class T>
void max_backward(const Tensor& gyt, const Tensor& it, Tensor& gxt, const Pool2dGeom& g) {
  const T* gy = gyt.data<T>();
  const int64_t* idx = it.data<int64_t>();
  if constexpr (!std::is_same_v<T, acc_t<T>>) {
    // Windows that cannot overlap (stride ≥ the dilated window) give each input at most one
    // gradient: written in place, as the f32 sum 0 + g rounds it (a -0 becomes +0; for bf16, a
    // NaN is quieted, on the bits).
    if ((g.kh - 1) * g.dh + 1 <= g.sh && (g.kw - 1) * g.dw + 1 <= g.sw) {
      const int64_t hw = g.h * g.w, ohw = g.oh * g.ow;
      T* gx = gxt.data<T>();
      parallel_for(g.n * g.c, 4, [&](int64_t b, int64_t e) {
        for (int64_t p = b; p < e; ++p) {
          T* plane = gx + p * hw;
          std::memset(static_cast<void*>(plane), 0, sizeof(T) * hw);
          const int64_t* ip = idx + p * ohw;
          const T* gp = gy + p * ohw;
          for (int64_t o = 0; o < ohw; ++o) {
            if (ip[o] < 0) continue;
            if constexpr (std::is_same_v<T, bf16>) {
              const uint16_t v = gp[o].bits;
              plane[ip[o]].bits = v == 0x8000 ? 0 : (v & 0x7fff) > 0x7f80 ? static_cast<uint16_t>(v | 0x40) : v;
            } else {
              plane[ip[o]] = T(0.0f + float(gp[o]));
            }
          }
        }
      });
      return;
    }
  }
  per_grad_plane(gxt.data<T>(), g, [&](int64_t p, acc_t<T>* plane) {
    for (int64_t o = 0; o < g.oh * g.ow; ++o) {
      const int64_t at = idx[p * g.oh * g.ow + o];
      if (at >= 0) plane[at] += acc_t<T>(gy[p * g.oh * g.ow + o]);
    }
  });
}

// The window of output (oy, ox): rows [y0, y1), cols [x0, x1) clipped to the input, and the divisor.
struct Window {
  int64_t y0, y1, x0, x1, count;
};

inline Window window(const Pool2dGeom& g, bool adaptive, int64_t oy, int64_t ox) {
  if (adaptive) {
    // PyTorch's adaptive bins: floor(o·H/OH) to ceil((o+1)·H/OH).
    const int64_t y0 = oy * g.h / g.oh, y1 = ((oy + 1) * g.h + g.oh - 1) / g.oh;
    const int64_t x0 = ox * g.w / g.ow, x1 = ((ox + 1) * g.w + g.ow - 1) / g.ow;
    return {y0, y1, x0, x1, (y1 - y0) * (x1 - x0)};
  }
  int64_t y0 = oy * g.sh - g.ph, x0 = ox * g.sw - g.pw;
  int64_t y1 = std::min(y0 + g.kh, g.h + g.ph), x1 = std::min(x0 + g.kw, g.w + g.pw);
  const int64_t padded = (y1 - y0) * (x1 - x0);
  y0 = std::max<int64_t>(y0, 0);
  x0 = std::max<int64_t>(x0, 0);
  y1 = std::min(y1, g.h);
  x1 = std::min(x1, g.w);
  return {y0, y1, x0, x1, g.count_include_pad ? padded : (y1 - y0) * (x1 - x0)};
}

template <class T>
void avg_forward(const Tensor& xt, Tensor& yt, const Pool2dGeom& g, bool adaptive) {
  using A = acc_t<T>;
  const T* x = xt.data<T>();
  T* y = yt.data<T>();
  parallel_for(g.n * g.c, 4, [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) {
      const T* plane = x + p * g.h * g.w;
      for (int64_t oy = 0; oy < g.oh; ++oy)
        for (int64_t ox = 0; ox < g.ow; ++ox) {
          const Window wd = window(g, adaptive, oy, ox);
          A s = 0;
          for (int64_t iy = wd.y0; iy < wd.y1; ++iy)
            for (int64_t ix = wd.x0; ix < wd.x1; ++ix) s += A(plane[iy * g.w + ix]);
          y[p * g.oh * g.ow + oy * g.ow + ox] = T(wd.count > 0 ? s / A(wd.count) : A(0));
        }
    }
  });
}

template <class T>
void avg_backward(const Tensor& gyt, Tensor& gxt, const Pool2dGeom& g, bool adaptive) {
  using A = acc_t<T>;
  const T* gy = gyt.data<T>();
  per_grad_plane(gxt.data<T>(), g, [&](int64_t p, A* plane) {
    for (int64_t oy = 0; oy < g.oh; ++oy)
      for (int64_t ox = 0; ox < g.ow; ++ox) {
        const Window wd = window(g, adaptive, oy, ox);
        if (wd.count <= 0) continue;
        const A v = A(gy[p * g.oh * g.ow + oy * g.ow + ox]) / A(wd.count);
        for (int64_t iy = wd.y0; iy < wd.y1; ++iy)
          for (int64_t ix = wd.x0; ix < wd.x1; ++ix) plane[iy * g.w + ix] += v;
      }
  });
}

void max_forward_cpu(const Tensor& x, Tensor& y, Tensor& i, const Pool2dGeom& g) {
  visit_float(x.dtype, "maxPool2d", [&](auto tag) { max_forward<typename decltype(tag)::type>(x, y, i, g); });
}
void max_backward_cpu(const Tensor& gy, const Tensor& i, Tensor& gx, const Pool2dGeom& g) {
  visit_float(gy.dtype, "maxPool2dBackward", [&](auto tag) { max_backward<typename decltype(tag)::type>(gy, i, gx, g); });
}
void avg_forward_cpu(const Tensor& x, Tensor& y, const Pool2dGeom& g, bool adaptive) {
  visit_float(x.dtype, "avgPool2d", [&](auto tag) { avg_forward<typename decltype(tag)::type>(x, y, g, adaptive); });
}
void avg_backward_cpu(const Tensor& gy, Tensor& gx, const Pool2dGeom& g, bool adaptive) {
  visit_float(gy.dtype, "avgPool2dBackward", [&](auto tag) { avg_backward<typename decltype(tag)::type>(gy, gx, g, adaptive); });
}

}  // namespace

FLOCK_REGISTER_KERNEL(max_pool2d_forward, CPU, max_forward_cpu);
FLOCK_REGISTER_KERNEL(max_pool2d_backward, CPU, max_backward_cpu);
FLOCK_REGISTER_KERNEL(avg_pool2d_forward, CPU, avg_forward_cpu);
FLOCK_REGISTER_KERNEL(avg_pool2d_backward, CPU, avg_backward_cpu);

}  // namespace flock::cpu
