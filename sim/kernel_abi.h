// What simulated device code calls in the kernel engine (FLOCKML_CUDA=SIM builds): the thread's
// built-in registers, the block barrier, the warp exchange behind shuffles and votes, and the
// tensor-core twins gemm.cu calls in place of its inline PTX. No macros here, so the engine's own
// sources can include it without the force-included CUDA spellings of sim/cuda_sim.h.
#pragma once
#include <cstdint>
#include <cstring>
#include "sim.h"

namespace sim {
namespace detail {

// threadIdx/blockIdx/blockDim/gridDim of the simulated thread running on this OS thread. The
// scheduler rewrites thread_idx before it resumes a thread; a block never leaves its worker.
// __thread (not thread_local): a trivial type read without C++'s TLS init wrapper.
struct Regs {
  uint3 thread_idx, block_idx, block_dim, grid_dim;
};
extern __thread Regs regs;

// One lane's deposit in its warp's exchange area: a shuffled value (up to 8 bytes), a vote, or
// an mma's A (4 words) and B (2 words) fragments.
union WarpSlot {
  uint64_t word;
  uint32_t mma[6];
};
enum class WarpOp : uint8_t { Shuffle, Vote, Sync, MmaBf16, MmaF16, MmaTf32 };

// What a warp collective sees once every lane in its mask has arrived: all lanes' deposits, the
// caller's lane, and the lanes whose deposit is valid (the mask, less lanes the block lacks).
struct WarpView {
  const WarpSlot* slots;
  unsigned lane;
  unsigned valid;
};

void block_barrier();
// Deposits `mine`, waits for the lanes of `mask` (a warp barrier, not a block one: other warps
// keep running) and returns the exchange area. Lanes must meet at the same kind of collective
// with the same mask, else KernelFault.
WarpView warp_exchange(unsigned mask, WarpOp op, const WarpSlot& mine);

}  // namespace detail

// mma.sync.aligned.{m16n8k16 bf16, m16n8k16 f16, m16n8k8 tf32}.row.col.f32, D = A·B + D in place:
// warp-collective (every lane of a full warp calls it), PTX ISA fragment layouts, products summed
// in double and rounded once to f32.
void mma_m16n8k16_bf16(float* d, const uint32_t* a, const uint32_t* b);
void mma_m16n8k16_f16(float* d, const uint32_t* a, const uint32_t* b);
void mma_m16n8k8_tf32(float* d, const uint32_t* a, const uint32_t* b);

// cvt.rna.tf32.f32: nearest with ties away from zero to tf32's 10 mantissa bits (the low 13 bits
// of the result are zero); infinities kept, NaN stays a (quiet) NaN.
inline uint32_t cvt_rna_tf32(float v) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  if ((u & 0x7f800000u) == 0x7f800000u) return (u & 0x007fffffu) ? (u | 0x00400000u) & 0xffffe000u : u;
  // Adding half a tf32 ulp to the magnitude rounds ties up in magnitude, i.e. away from zero; a
  // carry into the exponent is the correct next binade (or infinity).
  return (u + 0x1000u) & 0xffffe000u;
}

}  // namespace sim
