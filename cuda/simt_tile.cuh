// The SIMT tile shared by the f32/f64 GEMM and the implicit-GEMM convolutions: a 64×64 output tile
// per 256-thread block, K staged 16 deep in shared memory, each thread accumulating a 4×4 grid.
#pragma once

namespace flock::cuda {

constexpr int kTile = 64;   // output tile edge
constexpr int kDepth = 16;  // reduction slice per shared-memory stage

// Accumulates one staged slice: thread (ty, tx) owns rows ty+16r and cols tx+16q of the tile,
// spread 16 apart so a warp's shared reads fall in distinct banks or broadcast.
template <class T>
__device__ __forceinline__ void tile_mma(const T (&As)[kDepth][kTile + 1], const T (&Bs)[kDepth][kTile + 1], T (&acc)[4][4],
                                         int tx, int ty) {
#pragma unroll
  for (int kk = 0; kk < kDepth; ++kk) {
    T av[4], bv[4];
#pragma unroll
    for (int r = 0; r < 4; ++r) av[r] = As[kk][ty + 16 * r];
#pragma unroll
    for (int q = 0; q < 4; ++q) bv[q] = Bs[kk][tx + 16 * q];
#pragma unroll
    for (int r = 0; r < 4; ++r)
#pragma unroll
      for (int q = 0; q < 4; ++q) acc[r][q] += av[r] * bv[q];
  }
}

}  // namespace flock::cuda
