// Unit tests of the kernel engine and the device headers, standalone (no Node, no runtime):
// barriers, shuffles and votes, atomics, half-type rounding, the mma fragment layouts, fault
// detection, launch validation, shared-memory isolation and concurrent grids. Built by
// sim/tests/build_engine_test.sh; `engine_test --perf` prints ns per simulated thread.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_segmented_radix_sort.cuh>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

// --- stand-ins for the runtime: run the grid inline on the launching thread ---
namespace sim {
thread_local std::vector<const void*> last_pointers;
thread_local int last_error = 0;
void launch(const LaunchCfg& cfg, std::function<void()> body, std::vector<const void*> pointers) {
  last_pointers = std::move(pointers);
  last_error = validate_launch(cfg.grid, cfg.block, cfg.shared_bytes);
  if (!last_error) run_grid(cfg, body);
}
void enqueue_host_op(cudaStream_t, std::function<void()> op) { op(); }
}  // namespace sim

namespace {

int passed = 0, failed = 0;
std::mutex report_m;
#define CHECK(cond)                                                 \
  do {                                                              \
    if (!(cond)) {                                                  \
      std::lock_guard<std::mutex> lk(report_m);                     \
      std::printf("  FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); \
      throw std::runtime_error("check failed");                     \
    }                                                               \
  } while (0)

// Runs `fn`, expecting a KernelFault whose message contains every one of `needles`.
template <class F>
bool faults_with(F fn, std::initializer_list<const char*> needles) {
  try {
    fn();
  } catch (const sim::KernelFault& e) {
    const std::string m = e.what();
    for (const char* n : needles)
      if (m.find(n) == std::string::npos) {
        std::printf("  fault message lacks '%s': %s\n", n, m.c_str());
        return false;
      }
    return true;
  }
  std::printf("  no KernelFault thrown\n");
  return false;
}

// ---------------- kernels ----------------

__global__ void index_kernel(unsigned* out) {
  const unsigned tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const unsigned bid = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  const unsigned nt = blockDim.x * blockDim.y * blockDim.z;
  out[bid * nt + tid] = (bid << 16) | tid;
}

// Each round: write, barrier, read the mirrored thread's value, barrier.
__global__ void barrier_kernel(int* out, int rounds) {
  __shared__ int s[256];
  const int t = threadIdx.x, n = blockDim.x;
  int acc = 0;
  for (int r = 0; r < rounds; ++r) {
    s[t] = t * 1000 + r + static_cast<int>(blockIdx.x);
    __syncthreads();
    acc += s[n - 1 - t];
    __syncthreads();
  }
  out[blockIdx.x * n + t] = acc;
}

template <class T>
__global__ void shuffle_kernel(T* out, int width) {
  const int lane = threadIdx.x & 31;
  const T v = static_cast<T>(threadIdx.x * 3 + 1);
  const int base = blockIdx.x * blockDim.x * 4 + threadIdx.x * 4;
  out[base + 0] = __shfl_down_sync(0xffffffffu, v, 3, width);
  out[base + 1] = __shfl_up_sync(0xffffffffu, v, 5, width);
  out[base + 2] = __shfl_xor_sync(0xffffffffu, v, 6, width);
  out[base + 3] = __shfl_sync(0xffffffffu, v, lane + 7, width);
}

// Warp 0 reduces with shuffles while the other warps exit (others_wait = 0) or sit at a
// __syncthreads that warp 0 reaches afterwards (others_wait = 1).
__global__ void warp0_kernel(int* out, int others_wait) {
  const int warp = threadIdx.x >> 5;
  int v = static_cast<int>(threadIdx.x);
  if (warp == 0) {
    for (int d = 16; d > 0; d >>= 1) v += __shfl_down_sync(0xffffffffu, v, d);
    if (threadIdx.x == 0) out[blockIdx.x] = v;
  } else if (!others_wait) {
    return;
  }
  if (others_wait) __syncthreads();
}

__global__ void partial_warp_kernel(int* out) {
  // 48 threads: warp 1 has lanes 0..15 only.
  int v = 1;
  for (int d = 8; d > 0; d >>= 1) v += __shfl_xor_sync(0xffffffffu, v, d, 16);
  out[threadIdx.x] = v;
}

__global__ void vote_kernel(unsigned* out) {
  const unsigned lane = threadIdx.x & 31;
  const unsigned b = __ballot_sync(0xffffffffu, lane % 3 == 0);
  const int any = __any_sync(0xffffffffu, lane == 17);
  const int all = __all_sync(0xffffffffu, lane < 31);
  __syncwarp();
  out[threadIdx.x] = lane == 0 ? b : static_cast<unsigned>(any * 2 + all);
}

__global__ void atomics_kernel(int* i, float* f, double* d, unsigned long long* u, int* mx, unsigned short* h, unsigned* bits) {
  const int t = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  atomicAdd(i, 1);
  atomicAdd(f, 1.0f);
  atomicAdd(d, 0.5);
  atomicAdd(u, 2ull);
  atomicMax(mx, t);
  unsigned short old = *h, assumed;  // a 16-bit counter through CAS, as copy.cu adds halves
  do {
    assumed = old;
    old = atomicCAS(h, assumed, static_cast<unsigned short>(assumed + 1));
  } while (old != assumed);
  atomicOr(bits + (t & 7), 1u << (t % 32));
}

template <class M>
__global__ void mma_kernel(const uint32_t* a, const uint32_t* b, float* d) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const uint32_t* aw = a + (warp * 32 + lane) * 4;
  const uint32_t* bw = b + (warp * 32 + lane) * 2;
  float* dw = d + (warp * 32 + lane) * 4;
  float acc[4] = {dw[0], dw[1], dw[2], dw[3]};
  M::run(acc, aw, bw);
  for (int i = 0; i < 4; ++i) dw[i] = acc[i];
}
struct Bf16Op {
  static void run(float* d, const uint32_t* a, const uint32_t* b) { sim::mma_m16n8k16_bf16(d, a, b); }
};
struct F16Op {
  static void run(float* d, const uint32_t* a, const uint32_t* b) { sim::mma_m16n8k16_f16(d, a, b); }
};
struct Tf32Op {
  static void run(float* d, const uint32_t* a, const uint32_t* b) { sim::mma_m16n8k8_tf32(d, a, b); }
};

__global__ void divergent_kernel(int* out) {
  if (threadIdx.x < 32) __syncthreads();
  out[threadIdx.x] = 1;
}
__global__ void exited_lanes_kernel(int* out) {
  if ((threadIdx.x & 31) < 16) return;
  out[threadIdx.x] = __shfl_down_sync(0xffffffffu, 1, 1);
}
__global__ void deadlock_kernel(int* out) {
  if (threadIdx.x == 0)
    __syncthreads();
  else
    out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, 1, 1);
}
__global__ void mixed_collectives_kernel(int* out) {
  if (threadIdx.x & 1)
    __syncwarp();
  else
    out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, 1, 1);
}
__global__ void partial_mma_kernel(float* d) {
  const uint32_t a[4] = {0, 0, 0, 0}, b[2] = {0, 0};
  if (threadIdx.x < 31) sim::mma_m16n8k16_bf16(d, a, b);
}
__global__ void throwing_kernel(int* out) {
  if (threadIdx.x == 5) throw std::runtime_error("kernel threw");
  __syncthreads();
  out[threadIdx.x] = 1;
}

// Blocks write their own id into shared memory over several barrier rounds; any cross-talk
// between blocks running at once on different workers, or stale data, shows as a mismatch.
__global__ void isolation_kernel(int* errors, unsigned* worker_ids, int rounds) {
  __shared__ int s[128];
  const int t = threadIdx.x;
  for (int r = 0; r < rounds; ++r) {
    s[t] = static_cast<int>(blockIdx.x) * 1000 + r;
    __syncthreads();
    for (int k = 0; k < 128; k += 17)
      if (s[k] != static_cast<int>(blockIdx.x) * 1000 + r) atomicAdd(errors, 1);
    __syncthreads();
  }
  if (t == 0) worker_ids[blockIdx.x] = static_cast<unsigned>(std::hash<std::thread::id>()(std::this_thread::get_id()));
}

template <class T, int N>
__global__ void launch_conv_kernel(T* out, int n, const float* unused, long long big) {
  (void)unused;
  out[threadIdx.x] = static_cast<T>(n * N + big);
}

template <class A, int kThreads>
__global__ void block_scan_kernel(const A* in, A* incl, A* excl, A* totals, A* prods) {
  using BlockScan = cub::BlockScan<A, kThreads>;
  __shared__ typename BlockScan::TempStorage temp;
  const int t = threadIdx.x;
  A total;
  BlockScan(temp).InclusiveSum(in[t], incl[t], total);
  __syncthreads();
  A total2;
  BlockScan(temp).ExclusiveSum(in[t], excl[t], total2);
  __syncthreads();
  A p;
  BlockScan(temp).InclusiveScan(in[t] % 3 + 1, p, [](A x, A y) { return x * y % 1000003; });
  prods[t] = p;
  if (t == 0) {
    totals[0] = total;
    totals[1] = total2;
  }
}

__global__ void perf_plain_kernel(float* out, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) out[i] = out[i] * 2.0f + 1.0f;
}
__global__ void perf_barrier_kernel(float* out) {
  __shared__ float s[256];
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  s[threadIdx.x] = out[i];
  __syncthreads();
  out[i] = s[255 - threadIdx.x];
}
__global__ void perf_shuffle_kernel(float* out) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  float v = out[i];
  for (int d = 16; d > 0; d >>= 1) v += __shfl_xor_sync(0xffffffffu, v, d);
  out[i] = v;
}

// ---------------- tests ----------------

void test_indices() {
  const dim3 grid(3, 2, 2), block(4, 3, 2);
  std::vector<unsigned> out(12 * 24, 0xffffffffu);
  FLOCK_LAUNCH(grid, block, 0, nullptr, index_kernel)(out.data());
  for (unsigned b = 0; b < 12; ++b)
    for (unsigned t = 0; t < 24; ++t) CHECK(out[b * 24 + t] == ((b << 16) | t));
}

void test_barriers() {
  const int blocks = 40, n = 256, rounds = 5;
  std::vector<int> out(blocks * n);
  FLOCK_LAUNCH(blocks, n, 0, nullptr, barrier_kernel)(out.data(), rounds);
  for (int b = 0; b < blocks; ++b)
    for (int t = 0; t < n; ++t) {
      int want = 0;
      for (int r = 0; r < rounds; ++r) want += (n - 1 - t) * 1000 + r + b;
      CHECK(out[b * n + t] == want);
    }
}

template <class T>
void check_shuffles(int width) {
  const int n = 64, blocks = 2;
  std::vector<T> out(blocks * n * 4);
  FLOCK_LAUNCH(blocks, n, 0, nullptr, shuffle_kernel<T>)(out.data(), width);
  for (int b = 0; b < blocks; ++b)
    for (int t = 0; t < n; ++t) {
      const int lane = t & 31, wbase = t & ~31, g0 = lane & ~(width - 1), in = lane & (width - 1);
      auto val = [&](int l) { return static_cast<T>((wbase + l) * 3 + 1); };
      const T* o = &out[(b * n + t) * 4];
      CHECK(o[0] == (in + 3 < width ? val(lane + 3) : val(lane)));
      CHECK(o[1] == (in >= 5 ? val(lane - 5) : val(lane)));
      const int x = lane ^ 6;
      CHECK(o[2] == (x < g0 + width ? val(x) : val(lane)));
      CHECK(o[3] == val(g0 + ((lane + 7) & (width - 1))));
    }
}

void test_shuffles() {
  for (int w : {32, 16, 8, 4}) {
    check_shuffles<int>(w);
    check_shuffles<float>(w);
  }
  check_shuffles<double>(32);
  check_shuffles<long long>(16);
  check_shuffles<unsigned>(8);
  check_shuffles<unsigned long long>(32);
}

void test_shuffle_in_one_warp() {
  for (int wait = 0; wait < 2; ++wait) {
    std::vector<int> out(3, -1);
    FLOCK_LAUNCH(3, 128, 0, nullptr, warp0_kernel)(out.data(), wait);
    for (int b = 0; b < 3; ++b) CHECK(out[b] == 31 * 32 / 2);
  }
}

void test_partial_warp() {
  std::vector<int> out(48);
  FLOCK_LAUNCH(1, 48, 0, nullptr, partial_warp_kernel)(out.data());
  for (int t = 0; t < 48; ++t) CHECK(out[t] == 16);
}

void test_votes() {
  std::vector<unsigned> out(64);
  FLOCK_LAUNCH(1, 64, 0, nullptr, vote_kernel)(out.data());
  unsigned want = 0;
  for (unsigned l = 0; l < 32; l += 3) want |= 1u << l;
  CHECK(out[0] == want && out[32] == want);
  for (int t = 1; t < 64; ++t)
    if (t != 32) CHECK(out[t] == 2);  // any (lane 17) true, all (lane < 31) false
}

void test_atomics() {
  const int blocks = 96, n = 256, total = blocks * n;
  int i = 0, mx = -1;
  float f = 0;
  double d = 0;
  unsigned long long u = 0;
  unsigned short h = 0;
  unsigned bits[8] = {};
  FLOCK_LAUNCH(blocks, n, 0, nullptr, atomics_kernel)(&i, &f, &d, &u, &mx, &h, bits);
  CHECK(i == total);
  CHECK(f == static_cast<float>(total));
  CHECK(d == total * 0.5);
  CHECK(u == 2ull * total);
  CHECK(mx == total - 1);
  CHECK(h == static_cast<unsigned short>(total));
  for (int k = 0; k < 8; ++k) {
    unsigned want = 0;
    for (int t = k; t < total; t += 8) want |= 1u << (t % 32);
    CHECK(bits[k] == want);
  }
}

float as_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint32_t as_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

void test_bf16_rounding() {
  // Every finite bf16 round-trips; the midpoint between neighbours goes to the even one, and
  // one f32 ulp either side goes to the nearer one.
  for (uint32_t b = 0; b < 0x7f80; ++b) {
    for (uint32_t sign : {0u, 0x8000u}) {
      const uint16_t x = static_cast<uint16_t>(b | sign);
      const float v = __bfloat162float(__ushort_as_bfloat16(x));
      CHECK(__bfloat16_as_ushort(__float2bfloat16(v)) == x);
      const float next = __bfloat162float(__ushort_as_bfloat16(static_cast<uint16_t>(x + 1)));
      const float mid = as_float(static_cast<uint32_t>((uint64_t{as_bits(v)} + as_bits(next)) / 2));
      const uint16_t even = (x & 1) ? static_cast<uint16_t>(x + 1) : x;
      CHECK(__bfloat16_as_ushort(__float2bfloat16(mid)) == even);
      CHECK(__bfloat16_as_ushort(__float2bfloat16(as_float(as_bits(mid) - 1))) == x);
      CHECK(__bfloat16_as_ushort(__float2bfloat16(as_float(as_bits(mid) + 1))) == x + 1);
    }
  }
  CHECK(__bfloat16_as_ushort(__float2bfloat16(std::nanf(""))) == 0x7fff);
  CHECK(__bfloat16_as_ushort(__float2bfloat16(-std::nanf(""))) == 0x7fff);
  CHECK(__bfloat16_as_ushort(__float2bfloat16(INFINITY)) == 0x7f80);
  CHECK(__bfloat16_as_ushort(__float2bfloat16(3.4e38f)) == 0x7f80);  // past the largest bf16: inf
  CHECK(__bfloat16_as_ushort(__float2bfloat16(-0.0f)) == 0x8000);
}

void test_f16_rounding() {
  for (uint32_t b = 0; b < 0x7c00; ++b) {
    for (uint32_t sign : {0u, 0x8000u}) {
      const uint16_t x = static_cast<uint16_t>(b | sign);
      const float v = __half2float(__ushort_as_half(x));
      CHECK(__half_as_ushort(__float2half_rn(v)) == x);
      if (b == 0x7bff) continue;  // the largest half: its "neighbour" is infinity, checked below
      const float next = __half2float(__ushort_as_half(static_cast<uint16_t>(x + 1)));
      const float mid = (v + next) / 2;  // exact: halves have 11 significant bits
      const uint16_t even = (x & 1) ? static_cast<uint16_t>(x + 1) : x;
      CHECK(__half_as_ushort(__float2half_rn(mid)) == even);
      CHECK(__half_as_ushort(__float2half_rn(as_float(as_bits(mid) - 1))) == x);
      CHECK(__half_as_ushort(__float2half_rn(as_float(as_bits(mid) + 1))) == x + 1);
    }
  }
  CHECK(__half_as_ushort(__float2half_rn(65519.99f)) == 0x7bff);
  CHECK(__half_as_ushort(__float2half_rn(65520.0f)) == 0x7c00);
  CHECK(__half_as_ushort(__float2half_rn(-1e9f)) == 0xfc00);
  CHECK(__half_as_ushort(__float2half_rn(std::nanf(""))) == 0x7fff);
  CHECK(__half_as_ushort(__float2half_rn(2.9802322e-08f)) == 0x0000);  // exactly 2^-25: tie to 0
  CHECK(__half_as_ushort(__float2half_rn(2.9802326e-08f)) == 0x0001);  // just above: 2^-24
  CHECK(__half2float(__ushort_as_half(0x0001)) == 5.9604644775390625e-08f);
  CHECK(std::isnan(__half2float(__ushort_as_half(0x7e00))));
}

void test_cvt_tf32() {
  CHECK(sim::cvt_rna_tf32(1.0f) == 0x3f800000u);
  CHECK(sim::cvt_rna_tf32(as_float(0x3f801000u)) == 0x3f802000u);  // tie: away from zero
  CHECK(sim::cvt_rna_tf32(as_float(0xbf801000u)) == 0xbf802000u);  // negative tie: away too
  CHECK(sim::cvt_rna_tf32(as_float(0x3f803000u)) == 0x3f804000u);  // odd tie: still away (not even)
  CHECK(sim::cvt_rna_tf32(as_float(0x3f800fffu)) == 0x3f800000u);
  CHECK(sim::cvt_rna_tf32(as_float(0x3f801001u)) == 0x3f802000u);
  CHECK(sim::cvt_rna_tf32(as_float(0x3fffffffu)) == 0x40000000u);  // carry into the exponent
  CHECK(sim::cvt_rna_tf32(INFINITY) == 0x7f800000u);
  CHECK(sim::cvt_rna_tf32(-INFINITY) == 0xff800000u);
  CHECK(sim::cvt_rna_tf32(as_float(0x7f7fffffu)) == 0x7f800000u);  // past the largest tf32
  const uint32_t nan1 = sim::cvt_rna_tf32(as_float(0x7f800001u));  // a NaN with only low bits
  CHECK((nan1 & 0x7f800000u) == 0x7f800000u && (nan1 & 0x7fffffu) != 0 && (nan1 & 0x1fffu) == 0);
}

// --- mma: fragments written from the PTX ISA tables in the forward direction (register → matrix
// element), independently of the engine's decoder (matrix element → register). ---
enum class Shape { Bf16, F16, Tf32 };
struct Frag {
  int row, col;  // element of A (row, k) or B (k, n)
};
// Element held by `lane`, register `reg`, half `h` (h = 0 for tf32).
Frag a_elem(Shape s, int lane, int reg, int h, bool wrong) {
  const int g = lane >> 2, t = lane & 3;
  if (wrong && (reg == 1 || reg == 2)) reg = 3 - reg;  // a plausible mistake: regs 1 and 2 swapped
  if (s == Shape::Tf32) return {g + 8 * (reg & 1), t + 4 * (reg >> 1)};
  return {g + 8 * (reg & 1), 2 * t + h + 8 * (reg >> 1)};
}
Frag b_elem(Shape s, int lane, int reg, int h) {
  const int g = lane >> 2, t = lane & 3;
  if (s == Shape::Tf32) return {t + 4 * reg, g};
  return {2 * t + h + 8 * reg, g};
}

uint32_t encode(Shape s, float v) {
  if (s == Shape::Bf16) return __bfloat16_as_ushort(__float2bfloat16(v));
  if (s == Shape::F16) return __half_as_ushort(__float2half_rn(v));
  return sim::cvt_rna_tf32(v);
}

// Runs one mma per warp over random matrices; returns the number of outputs that differ from
// C + A·B computed directly in double.
template <class Op>
int mma_mismatches(Shape s, bool wrong_layout, unsigned seed) {
  const int K = s == Shape::Tf32 ? 8 : 16, warps = 2;
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> small(-64, 64);
  std::vector<uint32_t> a(warps * 32 * 4), b(warps * 32 * 2);
  std::vector<float> d(warps * 32 * 4), want(warps * 32 * 4);
  for (int w = 0; w < warps; ++w) {
    // Values with few significant bits: exact in every format, so only the layout can differ.
    // tf32 gets values that need rounding, so cvt_rna_tf32 is part of the path.
    float A[16][16], B[16][8];
    for (int r = 0; r < 16; ++r)
      for (int k = 0; k < K; ++k) A[r][k] = small(rng) / 16.0f + (s == Shape::Tf32 ? 1e-5f * small(rng) : 0.0f);
    for (int k = 0; k < K; ++k)
      for (int n = 0; n < 8; ++n) B[k][n] = small(rng) / 8.0f;
    for (int lane = 0; lane < 32; ++lane) {
      const int base = w * 32 + lane;
      for (int reg = 0; reg < 4; ++reg) {
        uint32_t word = 0;
        for (int h = 0; h < (s == Shape::Tf32 ? 1 : 2); ++h) {
          const Frag e = a_elem(s, lane, reg, h, wrong_layout);
          word |= encode(s, A[e.row][e.col]) << (16 * h);
        }
        a[base * 4 + reg] = word;
      }
      for (int reg = 0; reg < 2; ++reg) {
        uint32_t word = 0;
        for (int h = 0; h < (s == Shape::Tf32 ? 1 : 2); ++h) {
          const Frag e = b_elem(s, lane, reg, h);
          word |= encode(s, B[e.row][e.col]) << (16 * h);
        }
        b[base * 2 + reg] = word;
      }
      const int g = lane >> 2, t = lane & 3;
      for (int i = 0; i < 4; ++i) {
        const int r = g + 8 * (i >> 1), c = 2 * t + (i & 1);
        const float c0 = small(rng) / 4.0f;
        d[base * 4 + i] = c0;
        double acc = c0;
        for (int k = 0; k < K; ++k) {
          const double x = s == Shape::Tf32 ? as_float(sim::cvt_rna_tf32(A[r][k])) : A[r][k];
          acc += x * B[k][c];
        }
        want[base * 4 + i] = static_cast<float>(acc);
      }
    }
  }
  FLOCK_LAUNCH(1, warps * 32, 0, nullptr, mma_kernel<Op>)(a.data(), b.data(), d.data());
  int bad = 0;
  for (size_t i = 0; i < d.size(); ++i) bad += d[i] != want[i];
  return bad;
}

void test_mma_layouts() {
  for (unsigned seed = 1; seed <= 3; ++seed) {
    CHECK(mma_mismatches<Bf16Op>(Shape::Bf16, false, seed) == 0);
    CHECK(mma_mismatches<F16Op>(Shape::F16, false, seed) == 0);
    CHECK(mma_mismatches<Tf32Op>(Shape::Tf32, false, seed) == 0);
  }
  // The check can see a layout error: fragments built with registers 1 and 2 swapped disagree.
  CHECK(mma_mismatches<Bf16Op>(Shape::Bf16, true, 7) > 0);
  CHECK(mma_mismatches<F16Op>(Shape::F16, true, 7) > 0);
  CHECK(mma_mismatches<Tf32Op>(Shape::Tf32, true, 7) > 0);
}

void test_fault_detection() {
  std::vector<int> out(64);
  CHECK(faults_with(
      [&] {
        FLOCK_LAUNCH(2, 64, 0, nullptr, divergent_kernel)
        (out.data());
      },
      {"divergent_kernel", "divergent __syncthreads", "block (0,0,0)"}));
  CHECK(faults_with(
      [&] {
        FLOCK_LAUNCH(1, 64, 0, nullptr, exited_lanes_kernel)
        (out.data());
      },
      {"exited_lanes_kernel", "exited without reaching it"}));
  CHECK(faults_with([&] { FLOCK_LAUNCH(1, 32, 0, nullptr, deadlock_kernel)(out.data()); }, {"deadlock_kernel", "deadlock"}));
  CHECK(faults_with(
      [&] {
        FLOCK_LAUNCH(1, 32, 0, nullptr, mixed_collectives_kernel)
        (out.data());
      },
      {"mixed_collectives_kernel", "different warp collectives"}));
  float d[4] = {};
  CHECK(faults_with([&] { FLOCK_LAUNCH(1, 32, 0, nullptr, partial_mma_kernel)(d); }, {"partial_mma_kernel", "exited"}));
  CHECK(faults_with(
      [&] {
        FLOCK_LAUNCH(1, 16, 0, nullptr, partial_mma_kernel)
        (d);
      },
      {"partial_mma_kernel", "fewer than 32 lanes"}));
  bool threw = false;
  try {
    FLOCK_LAUNCH(4, 64, 0, nullptr, throwing_kernel)(out.data());
  } catch (const std::runtime_error& e) {
    threw = std::string(e.what()) == "kernel threw";
  }
  CHECK(threw);
  // The worker's fibers were unwound and are usable again.
  test_barriers();
  test_shuffle_in_one_warp();
}

void test_launch_validation() {
  std::vector<int> out(2048);
  int* p = out.data();
  auto err = [&](dim3 g, dim3 b, size_t sh) {
    FLOCK_LAUNCH(g, b, sh, nullptr, divergent_kernel)(p);
    return sim::last_error;
  };
  CHECK(err(dim3(1), dim3(1025), 0) == 9);
  CHECK(err(dim3(1), dim3(32, 32, 2), 0) == 9);
  CHECK(err(dim3(1), dim3(1, 1, 65), 0) == 9);
  CHECK(err(dim3(1, 65536), dim3(32), 0) == 9);
  CHECK(err(dim3(1, 1, 65536), dim3(32), 0) == 9);
  CHECK(err(dim3(0), dim3(32), 0) == 9);
  CHECK(err(dim3(1), dim3(0), 0) == 9);
  CHECK(err(dim3(1), dim3(32), 48 * 1024 + 1) == 9);
  CHECK(sim::validate_launch(dim3(0x7fffffffu), dim3(1024), 48 * 1024) == 0);
  CHECK(sim::validate_launch(dim3(0x80000000u), dim3(1), 0) == 9);
  CHECK(sim::validate_launch(dim3(1, 65535, 65535), dim3(16, 16, 4), 0) == 0);
}

void test_launch_macro() {
  std::vector<long> out(4, 0);
  const float* nothing = nullptr;
  // A template-id with a comma as the kernel; int64_t → int and literal 0 → pointer conversions.
  FLOCK_LAUNCH(1, 4, 0, 0, launch_conv_kernel<long, 3>)(out.data(), int64_t{5}, 0, 7);
  for (long v : out) CHECK(v == 22);
  CHECK(sim::last_pointers.size() == 2);
  CHECK(sim::last_pointers[0] == out.data() && sim::last_pointers[1] == nullptr);
  FLOCK_LAUNCH(dim3(1, 1, 1), dim3(2, 2), 0, nullptr, launch_conv_kernel<long, 1>)(out.data(), 1, nothing, 0);
  CHECK(out[0] == 1 && out[1] == 1 && out[3] == 22);  // threadIdx.x covers 0..1 only
}

void test_shared_isolation() {
  const int blocks = 600;
  int errors = 0;
  std::vector<unsigned> ids(blocks);
  FLOCK_LAUNCH(blocks, 128, 0, nullptr, isolation_kernel)(&errors, ids.data(), 4);
  CHECK(errors == 0);
  const std::set<unsigned> distinct(ids.begin(), ids.end());
  const unsigned hw = std::thread::hardware_concurrency();
  const char* env = std::getenv("FLOCKML_CUDA_SIM_WORKERS");
  const unsigned workers = env ? static_cast<unsigned>(std::atoi(env)) : hw;
  if (workers >= 2) CHECK(distinct.size() >= 2);
  std::printf("  %zu blocks ran on %zu OS threads\n", static_cast<size_t>(blocks), distinct.size());
}

void test_concurrent_grids() {
  std::atomic<int> bad{0};
  std::vector<std::thread> ts;
  for (int k = 0; k < 3; ++k)
    ts.emplace_back([&, k] {
      for (int it = 0; it < 20; ++it) {
        const int blocks = 16 + k * 8, n = 256, rounds = 2;
        std::vector<int> out(blocks * n);
        FLOCK_LAUNCH(blocks, n, 0, nullptr, barrier_kernel)(out.data(), rounds);
        for (int b = 0; b < blocks; ++b)
          for (int t = 0; t < n; ++t) {
            int want = 0;
            for (int r = 0; r < rounds; ++r) want += (n - 1 - t) * 1000 + r + b;
            if (out[b * n + t] != want) ++bad;
          }
        try {
          std::vector<int> o(64);
          FLOCK_LAUNCH(3, 64, 0, nullptr, divergent_kernel)(o.data());
          ++bad;
        } catch (const sim::KernelFault&) {
        }
      }
    });
  for (auto& t : ts) t.join();
  CHECK(bad == 0);
}

void test_block_scan() {
  constexpr int n = 512;
  std::vector<long long> in(n), incl(n), excl(n), prods(n), totals(2);
  std::mt19937 rng(3);
  for (auto& v : in) v = static_cast<long long>(rng() % 1000);
  FLOCK_LAUNCH(1, n, 0, nullptr, block_scan_kernel<long long, n>)
  (in.data(), incl.data(), excl.data(), totals.data(), prods.data());
  long long run = 0, prod = 1;
  for (int t = 0; t < n; ++t) {
    CHECK(excl[t] == run);
    run += in[t];
    CHECK(incl[t] == run);
    prod = prod * (in[t] % 3 + 1) % 1000003;
    CHECK(prods[t] == prod);
  }
  CHECK(totals[0] == run && totals[1] == run);
}

void test_radix_sort() {
  const int n = 1000;
  std::vector<uint64_t> keys(n), kout(n);
  std::vector<int> vals(n), vout(n);
  std::mt19937 rng(5);
  for (int i = 0; i < n; ++i) {
    keys[i] = (static_cast<uint64_t>(rng() % 50) << 8) | (rng() & 0xff);  // low byte: ignored bits
    vals[i] = i;
  }
  size_t bytes = 0;
  CHECK(cub::DeviceRadixSort::SortPairs(nullptr, bytes, keys.data(), kout.data(), vals.data(), vout.data(), n, 8, 64, nullptr) ==
        cudaSuccess);
  CHECK(bytes > 0);
  std::vector<char> temp(bytes);
  CHECK(cub::DeviceRadixSort::SortPairs(temp.data(), bytes, keys.data(), kout.data(), vals.data(), vout.data(), n, 8, 64,
                                        nullptr) == cudaSuccess);
  for (int i = 1; i < n; ++i) {
    CHECK((kout[i - 1] >> 8) <= (kout[i] >> 8));
    if ((kout[i - 1] >> 8) == (kout[i] >> 8)) CHECK(vout[i - 1] < vout[i]);  // stable
  }
  for (int i = 0; i < n; ++i) CHECK(kout[i] == keys[vout[i]]);
  // Segments of 100; signed and float keys sort numerically.
  std::vector<int> off;
  for (int s = 0; s <= 10; ++s) off.push_back(s * 100);
  std::vector<float> fk(n), fout(n);
  for (int i = 0; i < n; ++i) fk[i] = static_cast<float>(static_cast<int>(rng() % 2001) - 1000) / 7.0f;
  CHECK(cub::DeviceSegmentedRadixSort::SortPairs(temp.data(), bytes, fk.data(), fout.data(), vals.data(), vout.data(), n, 10,
                                                 off.data(), off.data() + 1, 0, 32, nullptr) == cudaSuccess);
  for (int s = 0; s < 10; ++s)
    for (int i = s * 100 + 1; i < (s + 1) * 100; ++i) {
      CHECK(fout[i - 1] <= fout[i]);
      if (fout[i - 1] == fout[i]) CHECK(vout[i - 1] < vout[i]);
    }
  for (int i = 0; i < n; ++i) CHECK(vout[i] / 100 == i / 100 && fout[i] == fk[vout[i]]);
}

// ---------------- timing ----------------

template <class Launch>
double ns_per_thread(long long threads, Launch launch) {
  launch();  // warm: fibers and pool made
  const auto t0 = std::chrono::steady_clock::now();
  const int reps = 5;
  for (int r = 0; r < reps; ++r) launch();
  const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
  return ns / reps / static_cast<double>(threads);
}

void perf() {
  const int blocks = 4096, n = 256;
  std::vector<float> buf(blocks * n, 1.0f);
  float* p = buf.data();
  const long long threads = 1ll * blocks * n;
  const double plain = ns_per_thread(threads, [&] { FLOCK_LAUNCH(blocks, n, 0, nullptr, perf_plain_kernel)(p, blocks * n); });
  const double bar = ns_per_thread(threads, [&] { FLOCK_LAUNCH(blocks, n, 0, nullptr, perf_barrier_kernel)(p); });
  const double shf = ns_per_thread(threads, [&] { FLOCK_LAUNCH(blocks, n, 0, nullptr, perf_shuffle_kernel)(p); });
  const char* env = std::getenv("FLOCKML_CUDA_SIM_WORKERS");
  std::printf("wall ns per simulated thread (workers=%s): no collective %.1f, one __syncthreads %.1f, 5 shuffles %.1f\n",
              env ? env : "cores", plain, bar, shf);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "--perf") {
    perf();
    return 0;
  }
  const std::pair<const char*, void (*)()> tests[] = {
      {"indices", test_indices},
      {"barriers", test_barriers},
      {"shuffles", test_shuffles},
      {"shuffle in one warp", test_shuffle_in_one_warp},
      {"partial warp", test_partial_warp},
      {"votes and __syncwarp", test_votes},
      {"atomics under contention", test_atomics},
      {"bf16 rounding", test_bf16_rounding},
      {"f16 rounding", test_f16_rounding},
      {"cvt.rna.tf32", test_cvt_tf32},
      {"mma fragment layouts", test_mma_layouts},
      {"fault detection", test_fault_detection},
      {"launch validation", test_launch_validation},
      {"FLOCK_LAUNCH", test_launch_macro},
      {"shared memory isolation", test_shared_isolation},
      {"concurrent grids", test_concurrent_grids},
      {"cub::BlockScan", test_block_scan},
      {"cub radix sorts", test_radix_sort},
  };
  for (const auto& [name, fn] : tests) {
    try {
      fn();
      ++passed;
      std::printf("ok   %s\n", name);
    } catch (const std::exception& e) {
      ++failed;
      std::printf("FAIL %s (%s)\n", name, e.what());
    }
  }
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
