// CUDA random tensors from the Philox stream shared with the CPU (philox.h): element j of a draw
// at (seed, offset) is word j % 4 of philox(seed, offset + j / 4), and normals pair words (0, 1)
// and (2, 3) through Box-Muller. One thread per group of four elements mirrors the CPU loop, so
// uniform, randint and bernoulli are bit-identical; normal agrees to the last ulp or two of the
// device's logf/cosf/sinf.
#include "common.cuh"
#include "kernels.h"
#include "philox.h"
#include "generated/random_codes.h"

namespace flock::cuda {
namespace {

template <class T>
__global__ void random_kernel(RandomKind kind, T* out, int64_t n, uint64_t seed, uint64_t offset, double a, double b) {
  const int64_t groups = (n + 3) / 4;
  const uint64_t span = static_cast<uint64_t>(b - a);
  FLOCK_GRID_STRIDE(g, groups) {
    const Philox4 r = philox(seed, offset + static_cast<uint64_t>(g));
    float v[4] = {0, 0, 0, 0};
    philox_values(static_cast<int>(kind), r, a, b, v);
    for (int j = 0; j < 4; ++j) {
      const int64_t i = g * 4 + j;
      if (i >= n) break;
      if (kind == RandomKind::randint)
        out[i] = Num<T>::from_double(a + static_cast<double>(r.v[j] % span));
      else
        out[i] = Num<T>::from_double(v[j]);
    }
  }
}

void random_cuda(RandomKind kind, Tensor& out, uint64_t seed, uint64_t offset, double a, double b) {
  const int64_t n = out.numel();
  if (n == 0) return;
  if (kind >= RandomKind::count) fail(Code::Arg, "random: unknown distribution");
  // randint's span is checked here: a zero span would be a division by zero on the device.
  if (kind == RandomKind::randint && !(b - a >= 1)) fail(Code::Arg, "randint: high (", b, ") must exceed low (", a, ")");
  cudaStream_t s = current_stream();
  visit(out.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    FLOCK_LAUNCH(grid_for(ceil_div(n, 4)), kThreads, 0, s, random_kernel<T>)(kind, out.data<T>(), n, seed, offset, a, b);
  });
  check_launch("random_kernel");
}

}  // namespace

FLOCK_REGISTER_KERNEL(random, CUDA, random_cuda);

}  // namespace flock::cuda
