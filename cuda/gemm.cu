// CUDA matmul over a MatmulPlan: out[z] = op(A_z) · op(B_z), row-major, transposes read through
// the leading dimensions so no operand is copied. f64, and f32 by default, use a tiled SIMT
// kernel; bf16/f16 use tensor cores (mma.sync m16n8k16) and f32 with allow_tf32 uses them too
// (m16n8k8 on operands rounded to tf32), all with f32 accumulation and one rounding at the end,
// which is what the CPU computes for the half types. Batch offsets ride in the kernel parameters
// (128 entries a launch), so a broadcast batch needs no device-side table.
#include <algorithm>
#include <cstdint>
#include "common.cuh"
#include "simt_tile.cuh"
#include "kernels.h"

namespace flock::cuda {
namespace {

constexpr int kBatchChunk = 128;

struct BatchOffsets {
  int64_t a[kBatchChunk];
  int64_t b[kBatchChunk];
};

struct GemmShape {
  int64_t m, n, k, lda, ldb;
  bool trans_a, trans_b;
  int64_t col_tile0;  // the first column tile of this launch (launches go in chunks of column tiles)
};
// Grid: row tiles on gridDim.x (up to 2^31 − 1 of them, so any m fits) and column tiles on
// gridDim.y, whose 65535 limit is met by launching the columns in chunks (col_tile0).

// Stages a kTile×kDepth slice of A as [k][i] and of B as [k][j]; each mapping picks the index
// that is contiguous in memory as the fast thread index, so global reads coalesce either way.
template <class T, class Store>
__device__ __forceinline__ void stage_a(const T* A, const GemmShape& s, int64_t row0, int64_t k0, int tid, int nthreads,
                                        Store put) {
  for (int e = tid; e < kTile * kDepth; e += nthreads) {
    const int i = s.trans_a ? e % kTile : e / kDepth;
    const int kk = s.trans_a ? e / kTile : e % kDepth;
    const int64_t r = row0 + i, c = k0 + kk;
    const bool in = r < s.m && c < s.k;
    put(kk, i, in, in ? (s.trans_a ? A[c * s.lda + r] : A[r * s.lda + c]) : T());
  }
}

template <class T, class Store>
__device__ __forceinline__ void stage_b(const T* B, const GemmShape& s, int64_t col0, int64_t k0, int tid, int nthreads,
                                        Store put) {
  for (int e = tid; e < kTile * kDepth; e += nthreads) {
    const int j = s.trans_b ? e / kDepth : e % kTile;
    const int kk = s.trans_b ? e % kDepth : e / kTile;
    const int64_t c = col0 + j, r = k0 + kk;
    const bool in = r < s.k && c < s.n;
    put(kk, j, in, in ? (s.trans_b ? B[c * s.ldb + r] : B[r * s.ldb + c]) : T());
  }
}

// 256 threads, a 4×4 register block each; rows/cols are spread 16 apart so a warp's shared
// reads hit distinct banks.
template <class T>
__global__ void __launch_bounds__(256) matmul_simt_kernel(const T* a, const T* b, T* c, GemmShape s, BatchOffsets offs) {
  __shared__ T As[kDepth][kTile + 1];
  __shared__ T Bs[kDepth][kTile + 1];
  const int z = blockIdx.z;
  const T* A = a + offs.a[z];
  const T* B = b + offs.b[z];
  T* C = c + static_cast<int64_t>(z) * s.m * s.n;
  const int64_t row0 = static_cast<int64_t>(blockIdx.x) * kTile, col0 = (s.col_tile0 + static_cast<int64_t>(blockIdx.y)) * kTile;
  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  T acc[4][4] = {};
  for (int64_t k0 = 0; k0 < s.k; k0 += kDepth) {
    stage_a(A, s, row0, k0, tid, 256, [&](int kk, int i, bool, T v) { As[kk][i] = v; });
    stage_b(B, s, col0, k0, tid, 256, [&](int kk, int j, bool, T v) { Bs[kk][j] = v; });
    __syncthreads();
    tile_mma(As, Bs, acc, tx, ty);
    __syncthreads();
  }
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const int64_t i = row0 + ty + 16 * r;
    if (i >= s.m) continue;
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const int64_t j = col0 + tx + 16 * q;
      if (j < s.n) C[i * s.n + j] = acc[r][q];
    }
  }
}

// The tensor-core element types: how a value is kept in shared memory and which mma.sync shape
// consumes it. Shared tiles keep K innermost, so one fragment register is always one aligned
// 32-bit word: two consecutive-k halves, or one tf32 value.
struct Bf16Mma {
  using Smem = uint16_t;
  static constexpr int kK = 16;   // K of one mma
  static constexpr int kPad = 8;  // row padding in elements, spreads a fragment load over banks
  __device__ __forceinline__ static Smem encode(bf16 v) { return v.bits; }
  __device__ __forceinline__ static void mma(float* d, const uint32_t* a, const uint32_t* b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#elif defined(FLOCK_CUDA_SIM)
    ::sim::mma_m16n8k16_bf16(d, a, b);
#endif
  }
};

struct F16Mma {
  using Smem = uint16_t;
  static constexpr int kK = 16;
  static constexpr int kPad = 8;
  __device__ __forceinline__ static Smem encode(f16 v) { return v.bits; }
  __device__ __forceinline__ static void mma(float* d, const uint32_t* a, const uint32_t* b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#elif defined(FLOCK_CUDA_SIM)
    ::sim::mma_m16n8k16_f16(d, a, b);
#endif
  }
};

// f32 operands rounded to nearest (ties away) to tf32's 10-bit mantissa once, while staging, as
// cuBLAS does; products are exact in the f32 accumulator.
struct Tf32Mma {
  using Smem = uint32_t;
  static constexpr int kK = 8;
  static constexpr int kPad = 4;
  __device__ __forceinline__ static Smem encode(float v) {
    uint32_t r = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(v));
#elif defined(FLOCK_CUDA_SIM)
    r = ::sim::cvt_rna_tf32(v);
#endif
    return r;
  }
  __device__ __forceinline__ static void mma(float* d, const uint32_t* a, const uint32_t* b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#elif defined(FLOCK_CUDA_SIM)
    ::sim::mma_m16n8k8_tf32(d, a, b);
#endif
  }
};

// 4 warps, each owning a 32×32 quarter of the 64×64 tile as 2×4 mma tiles of 16×8. Shared tiles
// are A as [m][k] and B as [n][k]. In every supported shape a thread's fragment words sit at
// k = step + e·t and k = step + e·t + kK/2 (e elements per word, t = lane % 4), rows g and g + 8
// for A, column g for B (g = lane / 4): the PTX fragment layouts of m16n8k16 (f16/bf16) and
// m16n8k8 (tf32) agree on that once counted in words.
template <class T, class M>
__global__ void __launch_bounds__(128) matmul_mma_kernel(const T* a, const T* b, T* c, GemmShape s, BatchOffsets offs) {
  using S = typename M::Smem;
  constexpr int kPerWord = 4 / sizeof(S);
  static_assert(kDepth % M::kK == 0, "a shared K slice holds whole mma steps");
  __shared__ __align__(16) S As[kTile][kDepth + M::kPad];
  __shared__ __align__(16) S Bs[kTile][kDepth + M::kPad];
  const int z = blockIdx.z;
  const T* A = a + offs.a[z];
  const T* B = b + offs.b[z];
  T* C = c + static_cast<int64_t>(z) * s.m * s.n;
  const int64_t row0 = static_cast<int64_t>(blockIdx.x) * kTile, col0 = (s.col_tile0 + static_cast<int64_t>(blockIdx.y)) * kTile;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wm = (warp >> 1) * 32, wn = (warp & 1) * 32, g = lane >> 2, t = lane & 3;
  auto word = [](const S* p) { return *reinterpret_cast<const uint32_t*>(p); };
  float acc[2][4][4] = {};
  for (int64_t k0 = 0; k0 < s.k; k0 += kDepth) {
    stage_a(A, s, row0, k0, tid, 128, [&](int kk, int i, bool in, T v) { As[i][kk] = in ? M::encode(v) : S(0); });
    stage_b(B, s, col0, k0, tid, 128, [&](int kk, int j, bool in, T v) { Bs[j][kk] = in ? M::encode(v) : S(0); });
    __syncthreads();
#pragma unroll
    for (int step = 0; step < kDepth; step += M::kK) {
      const int lo = step + kPerWord * t, hi = lo + M::kK / 2;
      uint32_t af[2][4], bfr[4][2];
#pragma unroll
      for (int mi = 0; mi < 2; ++mi) {
        const int r = wm + mi * 16 + g;
        af[mi][0] = word(&As[r][lo]);
        af[mi][1] = word(&As[r + 8][lo]);
        af[mi][2] = word(&As[r][hi]);
        af[mi][3] = word(&As[r + 8][hi]);
      }
#pragma unroll
      for (int ni = 0; ni < 4; ++ni) {
        const int col = wn + ni * 8 + g;
        bfr[ni][0] = word(&Bs[col][lo]);
        bfr[ni][1] = word(&Bs[col][hi]);
      }
#pragma unroll
      for (int mi = 0; mi < 2; ++mi)
#pragma unroll
        for (int ni = 0; ni < 4; ++ni) M::mma(acc[mi][ni], af[mi], bfr[ni]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int mi = 0; mi < 2; ++mi)
#pragma unroll
    for (int ni = 0; ni < 4; ++ni)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int64_t i = row0 + wm + mi * 16 + g + (e >= 2 ? 8 : 0);
        const int64_t j = col0 + wn + ni * 8 + 2 * t + (e & 1);
        if (i < s.m && j < s.n) C[i * s.n + j] = Num<T>::store(acc[mi][ni][e]);
      }
}

template <class T, class Launch>
void for_batch_chunks(const MatmulPlan& p, Launch launch) {
  const int64_t batch = static_cast<int64_t>(p.a_offsets.size());
  for (int64_t z0 = 0; z0 < batch; z0 += kBatchChunk) {
    const int count = static_cast<int>(batch - z0 < kBatchChunk ? batch - z0 : kBatchChunk);
    BatchOffsets offs{};
    for (int i = 0; i < count; ++i) {
      offs.a[i] = p.a_offsets[z0 + i];
      offs.b[i] = p.b_offsets[z0 + i];
    }
    launch(z0, count, offs);
  }
}

void matmul_cuda(const Tensor& a, const Tensor& b, Tensor& out, const MatmulPlan& p) {
  const int64_t batch = static_cast<int64_t>(p.a_offsets.size());
  if (batch == 0 || p.m == 0 || p.n == 0) return;
  if (p.b_offsets.size() != p.a_offsets.size()) fail(Code::Internal, "matmul: batch offset tables differ in length");
  if (p.accumulate) fail(Code::Internal, "matmul: accumulating into out runs on the CPU only (ops::matmul_into)");
  if (ceil_div(p.m, kTile) > 0x7fffffff) fail(Code::Shape, "matmul: ", p.m, " rows exceed the CUDA grid limit");
  cudaStream_t s = current_stream();
  const GemmShape base{p.m, p.n, p.k, p.trans_a ? p.m : p.k, p.trans_b ? p.k : p.n, p.trans_a, p.trans_b, 0};
  const unsigned row_tiles = static_cast<unsigned>(ceil_div(p.m, kTile));
  const int64_t col_tiles = ceil_div(p.n, kTile);
  constexpr int64_t kMaxGridY = 65535;
  auto run = [&](auto tag, auto kernel, int threads) {
    using T = typename decltype(tag)::type;
    for_batch_chunks<T>(p, [&](int64_t z0, int count, const BatchOffsets& offs) {
      for (int64_t c0 = 0; c0 < col_tiles; c0 += kMaxGridY) {
        GemmShape shape = base;
        shape.col_tile0 = c0;
        const unsigned cols = static_cast<unsigned>(std::min(kMaxGridY, col_tiles - c0));
        FLOCK_LAUNCH(dim3(row_tiles, cols, count), threads, 0, s, kernel)
        (a.data<T>(), b.data<T>(), out.data<T>() + z0 * p.m * p.n, shape, offs);
        check_launch("matmul_kernel");
      }
    });
  };
  switch (a.dtype) {
    case DType::f32:
      if (p.allow_tf32)
        run(type_tag<float>{}, matmul_mma_kernel<float, Tf32Mma>, 128);
      else
        run(type_tag<float>{}, matmul_simt_kernel<float>, 256);
      return;
    case DType::f64:
      run(type_tag<double>{}, matmul_simt_kernel<double>, 256);
      return;
    case DType::bf16:
      run(type_tag<bf16>{}, matmul_mma_kernel<bf16, Bf16Mma>, 128);
      return;
    case DType::f16:
      run(type_tag<f16>{}, matmul_mma_kernel<f16, F16Mma>, 128);
      return;
    default:
      fail(Code::DType, "matmul: expected a floating dtype (f32, f64, bf16, f16), got ", dtype_name(a.dtype));
  }
}

}  // namespace

FLOCK_REGISTER_KERNEL(matmul, CUDA, matmul_cuda);

}  // namespace flock::cuda
