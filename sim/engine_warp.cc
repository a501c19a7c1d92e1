// Warp collectives: one warp barrier per shuffle, vote, __syncwarp or mma, waited on by that
// warp's lanes only, so a shuffle inside `if (warp == 0)` runs while other warps are elsewhere.
// The mma twins decode the PTX ISA fragment layouts of mma.sync m16n8k16 (f16/bf16) and m16n8k8
// (tf32), row.col, with groupID g = lane / 4 and t = lane % 4 (PTX ISA, "Matrix Fragments for
// mma.m16n8k16 / mma.m16n8k8").
#include <cstdio>
#include "engine.h"

namespace sim {

namespace {

// Fault paths kept out of line: string building in warp_exchange would enlarge the frame every
// parked lane keeps on its stack, and resuming lanes is bound by those stack lines' cache misses.
[[noreturn, gnu::cold, gnu::noinline]] void lane_not_in_mask(const engine::Block& b, unsigned t, unsigned mask) {
  char m[16];
  std::snprintf(m, sizeof(m), "0x%08x", mask);
  engine::fault(b, b.thread_name(t) + " called a warp collective with mask " + m + ", which leaves out its own lane");
}
[[noreturn, gnu::cold, gnu::noinline]] void mismatched(const engine::Block& b, unsigned t) {
  engine::fault(b, "lanes of warp " + std::to_string(t >> 5) + " met at different warp collectives or masks (" +
                       b.thread_name(t) + " differs from the lanes already waiting)");
}
[[noreturn, gnu::cold, gnu::noinline]] void outside_kernel() {
  throw KernelFault("warp collective called outside a simulated kernel");
}

}  // namespace

detail::WarpView detail::warp_exchange(unsigned mask, WarpOp op, const WarpSlot& mine) {
  engine::Block* bp = engine::current_block;
  if (!bp) outside_kernel();
  engine::Block& b = *bp;
  const unsigned t = engine::current_thread, lane = t & 31;
  engine::Warp& w = b.warps[t >> 5];
  if (!((mask >> lane) & 1u)) lane_not_in_mask(b, t, mask);
  if (w.arrived == 0) {
    w.mask = mask;
    w.op = op;
  } else if (w.mask != mask || w.op != op) {
    mismatched(b, t);
  }
  const uint32_t need = mask & w.exists;
  const uint8_t parity = w.parity;
  w.slots[parity][lane] = mine;
  w.arrived |= 1u << lane;
  if (w.arrived == need) {
    // The last lane releases the others and keeps running.
    uint32_t others = need & ~(1u << lane);
    while (others) {
      const unsigned u = (t & ~31u) + static_cast<unsigned>(__builtin_ctz(others));
      others &= others - 1;
      b.threads[u].state = engine::State::Ready;
      b.ready.push_back(u);
    }
    w.arrived = 0;
    w.parity ^= 1;
  } else {
    b.threads[t].state = engine::State::AtWarp;
    engine::park(b, t);
  }
  return WarpView{w.slots[parity], lane, need};
}

namespace {

float bf16_to_float(uint32_t h) {
  const uint32_t u = h << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

float f16_to_float(uint32_t h) {
  const uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  uint32_t u;
  if (exp == 0x1f) {
    u = sign | 0x7f800000u | (man << 13);
  } else if (exp) {
    u = sign | ((exp + 112) << 23) | (man << 13);
  } else if (!man) {
    u = sign;
  } else {
    // Subnormal half: exact in f32 as man * 2^-24.
    float f = static_cast<float>(man) * 5.9604644775390625e-08f;
    return sign ? -f : f;
  }
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// One 16-bit element of a fragment word: the lower k (or column) sits in the low half.
float half_of(uint32_t word, int half, bool bf16) {
  const uint32_t h = (word >> (16 * half)) & 0xffffu;
  return bf16 ? bf16_to_float(h) : f16_to_float(h);
}

// The tensor core reads a tf32 operand's top 19 bits and ignores the rest.
float tf32_value(uint32_t word) {
  const uint32_t u = word & 0xffffe000u;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// m16n8k16 A (16×16, row): a lane's words are (g, 2t..2t+1), (g+8, 2t..), (g, 2t+8..), (g+8, 2t+8..).
float a16(const detail::WarpSlot* s, int r, int k, bool bf16) {
  const int lane = (r & 7) * 4 + (k & 7) / 2, reg = (r >> 3) + 2 * (k >> 3);
  return half_of(s[lane].mma[reg], k & 1, bf16);
}
// m16n8k16 B (16×8, col): a lane's words are (k = 2t..2t+1, n = g) and (k = 2t+8..2t+9, n = g).
float b16(const detail::WarpSlot* s, int k, int n, bool bf16) {
  const int lane = n * 4 + (k & 7) / 2, reg = 4 + (k >> 3);
  return half_of(s[lane].mma[reg], k & 1, bf16);
}
// m16n8k8 A (16×8, row): (g, t), (g+8, t), (g, t+4), (g+8, t+4).
float a8(const detail::WarpSlot* s, int r, int k) {
  const int lane = (r & 7) * 4 + (k & 3), reg = (r >> 3) + 2 * (k >> 2);
  return tf32_value(s[lane].mma[reg]);
}
// m16n8k8 B (8×8, col): (k = t, n = g), (k = t+4, n = g).
float b8(const detail::WarpSlot* s, int k, int n) {
  const int lane = n * 4 + (k & 3), reg = 4 + (k >> 2);
  return tf32_value(s[lane].mma[reg]);
}

[[noreturn, gnu::cold, gnu::noinline]] void partial_warp_mma(const engine::Block* b, unsigned t) {
  if (!b) throw KernelFault("mma.sync called outside a simulated kernel");
  engine::fault(*b, "mma.sync in warp " + std::to_string(t >> 5) + ", which has fewer than 32 lanes");
}

void mma(float* d, const uint32_t* a, const uint32_t* b, detail::WarpOp op) {
  const engine::Block* bp = engine::current_block;
  const unsigned t = engine::current_thread;
  if (!bp || bp->warps[t >> 5].exists != 0xffffffffu) partial_warp_mma(bp, t);
  detail::WarpSlot mine{};
  for (int i = 0; i < 4; ++i) mine.mma[i] = a[i];
  mine.mma[4] = b[0];
  mine.mma[5] = b[1];
  const detail::WarpView v = detail::warp_exchange(0xffffffffu, op, mine);
  const int g = static_cast<int>(v.lane >> 2), tg = static_cast<int>(v.lane & 3);
  const bool tf32 = op == detail::WarpOp::MmaTf32, bf16 = op == detail::WarpOp::MmaBf16;
  const int kk = tf32 ? 8 : 16;
  // C/D (16×8): d[i] is (g + 8·(i/2), 2t + i%2). Products of these formats are exact in double.
  for (int i = 0; i < 4; ++i) {
    const int r = g + 8 * (i >> 1), c = 2 * tg + (i & 1);
    double acc = d[i];
    for (int k = 0; k < kk; ++k) {
      const double x = tf32 ? a8(v.slots, r, k) : a16(v.slots, r, k, bf16);
      const double y = tf32 ? b8(v.slots, k, c) : b16(v.slots, k, c, bf16);
      acc += x * y;
    }
    d[i] = static_cast<float>(acc);
  }
}

}  // namespace

void mma_m16n8k16_bf16(float* d, const uint32_t* a, const uint32_t* b) { mma(d, a, b, detail::WarpOp::MmaBf16); }
void mma_m16n8k16_f16(float* d, const uint32_t* a, const uint32_t* b) { mma(d, a, b, detail::WarpOp::MmaF16); }
void mma_m16n8k8_tf32(float* d, const uint32_t* a, const uint32_t* b) { mma(d, a, b, detail::WarpOp::MmaTf32); }

}  // namespace sim
