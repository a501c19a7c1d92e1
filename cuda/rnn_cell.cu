// CUDA recurrent cell (rnn_cell.h): one thread per (batch row, hidden unit) computes every gate of
// that unit, so a step is one launch that reads the two projections once and writes h (and c, and
// what backward keeps) once. Memory bound like the other element-wise kernels; the mode is a
// template parameter, the formulas those of rnn_cell_math.h, shared with the CPU.
#include <cstdint>
#include "common.cuh"
#include "rnn_cell_math.h"

namespace flock::cuda {
namespace {

template <class T>
struct DeviceIO {
  using C = typename Num<T>::C;
  __device__ __forceinline__ static C load(T v) { return Num<T>::load(v); }
  __device__ __forceinline__ static T store(C v) { return Num<T>::store(v); }
};

template <class T>
__device__ __forceinline__ const T* row(const T* p, int64_t r, int64_t n) {
  return p ? p + r * n : nullptr;
}
template <class T>
__device__ __forceinline__ T* row(T* p, int64_t r, int64_t n) {
  return p ? p + r * n : nullptr;
}

template <RnnMode M, class T>
__global__ void rnn_cell_forward_kernel(const T* gx, const T* gh, const T* bh, const T* hp, const T* cp, T* h, T* c, T* saved,
                                        int64_t rows, int64_t H, int64_t G, int64_t S) {
  FLOCK_GRID_STRIDE(e, rows * H) {
    const int64_t r = e / H, j = e % H;
    rnn::forward_unit<M, DeviceIO<T>, rnn::StdFn>(gx + r * G, gh + r * G, bh, hp + r * H, row(cp, r, H), h + r * H, row(c, r, H),
                                                  row(saved, r, S), H, j);
  }
}

template <RnnMode M, class T>
__global__ void rnn_cell_backward_kernel(const T* gyh, const T* gyc, const T* ghn, T* carry, const T* h, const T* c, const T* cp,
                                         const T* hp, const T* saved, T* dgx, T* dgh, int64_t rows, int64_t H, int64_t G,
                                         int64_t S) {
  FLOCK_GRID_STRIDE(e, rows * H) {
    const int64_t r = e / H, j = e % H;
    rnn::backward_unit<M, DeviceIO<T>, rnn::StdFn>(row(gyh, r, H), row(gyc, r, H), row(ghn, r, H), row(carry, r, H), h + r * H,
                                                   row(c, r, H), row(cp, r, H), hp + r * H, row(saved, r, S), dgx + r * G,
                                                   row(dgh, r, G), H, j);
  }
}

template <class T>
const T* ptr(const Tensor* t) {
  return t ? t->data<T>() : nullptr;
}
template <class T>
T* mut(Tensor* t) {
  return t ? t->data<T>() : nullptr;
}

void rnn_cell_forward_cuda(RnnMode mode, const Tensor& gx, const Tensor& gh, const Tensor* b_hh, const Tensor& h_prev,
                           const Tensor* c_prev, Tensor& h, Tensor* c, Tensor* saved) {
  const int64_t rows = h.shape[0], H = h.shape[1], G = gx.shape[1], S = rnn_saved(mode) * H;
  if (rows * H == 0) return;
  cudaStream_t s = current_stream();
  visit_float(gx.dtype, "rnnCell", [&](auto tag) {
    using T = typename decltype(tag)::type;
    rnn::with_mode(mode, [&](auto m) {
      constexpr RnnMode M = decltype(m)::value;
      FLOCK_LAUNCH(grid_for(rows * H), kThreads, 0, s, rnn_cell_forward_kernel<M, T>)
      (gx.data<T>(), gh.data<T>(), ptr<T>(b_hh), h_prev.data<T>(), ptr<T>(c_prev), h.data<T>(), mut<T>(c), mut<T>(saved), rows, H,
       G, S);
    });
  });
  check_launch("rnn_cell_forward_kernel");
}

void rnn_cell_backward_cuda(RnnMode mode, const Tensor* gy_h, const Tensor* gy_c, const Tensor* gh_next, Tensor* carry,
                            const Tensor& h, const Tensor* c, const Tensor* c_prev, const Tensor& h_prev, const Tensor* saved,
                            Tensor& dgx, Tensor* dgh) {
  const int64_t rows = h.shape[0], H = h.shape[1], G = dgx.shape[1], S = rnn_saved(mode) * H;
  if (rows * H == 0) return;
  cudaStream_t s = current_stream();
  visit_float(h.dtype, "rnnCellBackward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    rnn::with_mode(mode, [&](auto m) {
      constexpr RnnMode M = decltype(m)::value;
      FLOCK_LAUNCH(grid_for(rows * H), kThreads, 0, s, rnn_cell_backward_kernel<M, T>)
      (ptr<T>(gy_h), ptr<T>(gy_c), ptr<T>(gh_next), mut<T>(carry), h.data<T>(), ptr<T>(c), ptr<T>(c_prev), h_prev.data<T>(),
       ptr<T>(saved), dgx.data<T>(), mut<T>(dgh), rows, H, G, S);
    });
  });
  check_launch("rnn_cell_backward_kernel");
}

}  // namespace

FLOCK_REGISTER_KERNEL(rnn_cell_forward, CUDA, rnn_cell_forward_cuda);
FLOCK_REGISTER_KERNEL(rnn_cell_backward, CUDA, rnn_cell_backward_cuda);

}  // namespace flock::cuda
