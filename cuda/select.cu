// CUDA maskedSelect and nonzero: a thread per element; a true element writes to the slot its
// running count (positions) names. A slot past the counted size means the count given does not
// match the mask: that write is dropped and the op fails at the next sync point (ERR_INDEX).
#include "common.cuh"
#include "kernels.h"

namespace flock::cuda {
namespace {

struct SelectShape {
  int nd;
  int64_t size[kMaxDims];
};

__device__ __forceinline__ int64_t slot_of(const bool* mask, const int64_t* pos, int64_t i, int64_t count, IndexFault* fault,
                                           int op) {
  if (!mask[i]) return -1;
  const int64_t p = pos[i] - 1;
  if (p < 0 || p >= count) {
    if (atomicCAS(&fault->flag, 0, 1) == 0) {
      fault->op = op;
      fault->value = p;
      fault->limit = count;
    }
    return -1;
  }
  return p;
}

template <class W>
__global__ void masked_select_kernel(const W* x, const bool* mask, const int64_t* pos, W* out, int64_t n, int64_t count,
                                     IndexFault* fault) {
  FLOCK_GRID_STRIDE(i, n) {
    const int64_t p = slot_of(mask, pos, i, count, fault, kMaskedSelect);
    if (p >= 0) out[p] = x[i];
  }
}

__global__ void nonzero_kernel(const bool* mask, const int64_t* pos, int64_t* out, int64_t n, int64_t count, SelectShape sh,
                               IndexFault* fault) {
  FLOCK_GRID_STRIDE(i, n) {
    const int64_t p = slot_of(mask, pos, i, count, fault, kNonzero);
    if (p < 0) continue;
    int64_t rem = i;
    for (int d = sh.nd - 1; d >= 0; --d) {
      out[p * sh.nd + d] = rem % sh.size[d];
      rem /= sh.size[d];
    }
  }
}

void masked_select_cuda(const Tensor& x, const Tensor& mask, const Tensor& positions, Tensor& out) {
  const int64_t n = x.numel();
  if (n == 0) return;
  cudaStream_t s = current_stream();
  IndexFault* fault = current_index_fault();
  const bool* m = mask.data<bool>();
  const int64_t* p = positions.data<int64_t>();
  const int64_t c = out.numel();
  switch (dtype_size(x.dtype)) {
    case 1:
      FLOCK_LAUNCH(grid_for(n), kThreads, 0, s, masked_select_kernel<uint8_t>)
      (static_cast<const uint8_t*>(x.raw()), m, p, static_cast<uint8_t*>(out.raw()), n, c, fault);
      break;
    case 2:
      FLOCK_LAUNCH(grid_for(n), kThreads, 0, s, masked_select_kernel<uint16_t>)
      (static_cast<const uint16_t*>(x.raw()), m, p, static_cast<uint16_t*>(out.raw()), n, c, fault);
      break;
    case 4:
      FLOCK_LAUNCH(grid_for(n), kThreads, 0, s, masked_select_kernel<uint32_t>)
      (static_cast<const uint32_t*>(x.raw()), m, p, static_cast<uint32_t*>(out.raw()), n, c, fault);
      break;
    default:
      FLOCK_LAUNCH(grid_for(n), kThreads, 0, s, masked_select_kernel<uint64_t>)
      (static_cast<const uint64_t*>(x.raw()), m, p, static_cast<uint64_t*>(out.raw()), n, c, fault);
      break;
  }
  check_launch("masked_select_kernel");
}

void nonzero_cuda(const Tensor& mask, const Tensor& positions, Tensor& out) {
  const int64_t n = mask.numel();
  if (n == 0) return;
  if (mask.dim() > kMaxDims) fail(Code::Shape, "nonzero: at most ", kMaxDims, " dimensions are supported");
  SelectShape sh{};
  sh.nd = static_cast<int>(mask.dim());
  for (int d = 0; d < sh.nd; ++d) sh.size[d] = mask.shape[d];
  cudaStream_t s = current_stream();
  IndexFault* fault = current_index_fault();
  FLOCK_LAUNCH(grid_for(n), kThreads, 0, s, nonzero_kernel)
  (mask.data<bool>(), positions.data<int64_t>(), out.data<int64_t>(), n, out.shape[0], sh, fault);
  check_launch("nonzero_kernel");
}

}  // namespace

FLOCK_REGISTER_KERNEL(masked_select, CUDA, masked_select_cuda);
FLOCK_REGISTER_KERNEL(nonzero, CUDA, nonzero_cuda);

}  // namespace flock::cuda
