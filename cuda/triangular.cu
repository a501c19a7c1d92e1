// CUDA tril/triu: one thread per element keeps it or writes zero (all bits clear in every dtype,
// so the kernel is instantiated per element width, not per dtype).
#include <cstdint>
#include "common.cuh"
#include "generated/kernels_triangular.h"

namespace flock::cuda {
namespace {

template <class W>
__global__ void triangular_kernel(const W* x, W* out, int64_t n, int64_t rows, int64_t cols, int64_t diagonal, bool upper) {
  FLOCK_GRID_STRIDE(e, n) {
    const int64_t j = e % cols, i = (e / cols) % rows;
    const bool keep = upper ? j - i >= diagonal : j - i <= diagonal;
    out[e] = keep ? x[e] : W(0);
  }
}

void triangular_cuda(const Tensor& x, Tensor& out, int64_t diagonal, bool upper) {
  const int64_t n = x.numel();
  if (n == 0) return;
  const int64_t nd = x.dim();
  const int64_t rows = x.shape[nd - 2], cols = x.shape[nd - 1];
  cudaStream_t s = current_stream();
  auto run = [&](auto tag) {
    using W = typename decltype(tag)::type;
    FLOCK_LAUNCH(grid_for(n), kThreads, 0, s, triangular_kernel<W>)
    (static_cast<const W*>(x.raw()), static_cast<W*>(out.raw()), n, rows, cols, diagonal, upper);
  };
  switch (dtype_size(x.dtype)) {
    case 1:
      run(type_tag<uint8_t>{});
      break;
    case 2:
      run(type_tag<uint16_t>{});
      break;
    case 4:
      run(type_tag<uint32_t>{});
      break;
    default:
      run(type_tag<uint64_t>{});
      break;
  }
  check_launch("triangular_kernel");
}

}  // namespace

FLOCK_REGISTER_KERNEL(triangular, CUDA, triangular_cuda);

}  // namespace flock::cuda
