// CUDA data movement: strided copies, index_select, gather, scatter_add, one_hot, host copies
// and cross-device transfers. Copies move raw elements by size, so one kernel serves every dtype.
// A bad index cannot throw from a kernel: it is recorded in the stream's fault slot and rejects
// the next sync point with ERR_INDEX, as the CPU's check does.
#include <algorithm>
#include <cstring>
#include <memory>
#include "common.cuh"
#include "device_guard.cuh"
#include "index_plan.cuh"
#include "kernels.h"

namespace flock::cuda {
namespace {

template <class F>
void with_word(size_t bytes, F f) {
  switch (bytes) {
    case 1:
      f(type_tag<uint8_t>{});
      return;
    case 2:
      f(type_tag<uint16_t>{});
      return;
    case 4:
      f(type_tag<uint32_t>{});
      return;
    case 8:
      f(type_tag<uint64_t>{});
      return;
    default:
      fail(Code::Internal, "copy: unsupported element size ", bytes);
  }
}

struct StridedPlan {
  int nd;
  int64_t size[kMaxDims], src[kMaxDims], dst[kMaxDims];
  int64_t src_offset, dst_offset;
};

template <class W>
__global__ void strided_copy_kernel(const W* src, W* dst, int64_t n, StridedPlan p) {
  FLOCK_GRID_STRIDE(i, n) {
    int64_t rem = i, so = p.src_offset, dof = p.dst_offset;
    for (int d = p.nd - 1; d >= 0; --d) {
      const int64_t c = rem % p.size[d];
      rem /= p.size[d];
      so += c * p.src[d];
      dof += c * p.dst[d];
    }
    dst[dof] = src[so];
  }
}

template <class W>
__global__ void index_select_kernel(const W* x, const void* index, bool wide, W* out, int64_t outer, int64_t n, int64_t dim_size,
                                    int64_t inner, IndexFault* fault) {
  FLOCK_GRID_STRIDE(e, outer * n * inner) {
    const int64_t i = e % inner, j = (e / inner) % n, o = e / (inner * n);
    const int64_t k = read_index(index, wide, j);
    if (k < 0 || k >= dim_size) {
      report_fault(fault, kIndexSelect, k, dim_size);
      continue;
    }
    out[e] = x[(o * dim_size + k) * inner + i];
  }
}

template <class W>
__global__ void gather_kernel(const W* x, const void* index, bool wide, W* out, int64_t n, IndexPlan g, IndexFault* fault) {
  FLOCK_GRID_STRIDE(e, n) {
    const int64_t k = read_index(index, wide, e);
    if (k < 0 || k >= g.data_dim) {
      report_fault(fault, kGather, k, g.data_dim);
      continue;
    }
    out[e] = x[index_offset(g, e, k)];
  }
}

// Adds that several threads may aim at one element: hardware atomics where they exist, and a
// compare-and-swap on the enclosing word otherwise (half types round after every add, as the
// CPU's scalar loop does).
template <class T>
__device__ __forceinline__ void atomic_accumulate(T* p, T v) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, int32_t>) {
    atomicAdd(p, v);
  } else if constexpr (std::is_same_v<T, int64_t>) {
    atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
  } else if constexpr (std::is_same_v<T, bf16> || std::is_same_v<T, f16>) {
    unsigned short* w = reinterpret_cast<unsigned short*>(p);
    unsigned short old = *w, assumed;
    do {
      assumed = old;
      T cur;
      cur.bits = assumed;
      const unsigned short next = Num<T>::store(Num<T>::load(cur) + Num<T>::load(v)).bits;
      old = atomicCAS(w, assumed, next);
    } while (old != assumed);
  } else {
    // u8: update the byte inside its aligned 32-bit word.
    const uintptr_t addr = reinterpret_cast<uintptr_t>(p);
    unsigned int* w = reinterpret_cast<unsigned int*>(addr & ~uintptr_t(3));
    const unsigned shift = static_cast<unsigned>(addr & 3) * 8;
    unsigned int old = *w, assumed;
    do {
      assumed = old;
      const unsigned byte = ((assumed >> shift) & 0xffu) + static_cast<unsigned>(v);
      old = atomicCAS(w, assumed, (assumed & ~(0xffu << shift)) | ((byte & 0xffu) << shift));
    } while (old != assumed);
  }
}

template <class T>
__global__ void scatter_add_kernel(T* out, const void* index, bool wide, const T* src, int64_t n, IndexPlan g,
                                   IndexFault* fault) {
  FLOCK_GRID_STRIDE(e, n) {
    const int64_t k = read_index(index, wide, e);
    if (k < 0 || k >= g.data_dim) {
      report_fault(fault, kScatterAdd, k, g.data_dim);
      continue;
    }
    atomic_accumulate(out + index_offset(g, e, k), src[e]);
  }
}

void strided_copy_cuda(const Tensor& src, Tensor& dst, const StridedCopy& p) {
  int64_t n = 1;
  for (int64_t s : p.shape) n *= s;
  if (n == 0) return;
  if (p.shape.size() > kMaxDims) fail(Code::Shape, "strided_copy: at most ", kMaxDims, " dimensions are supported");
  StridedPlan plan{};
  plan.nd = static_cast<int>(p.shape.size());
  for (int d = 0; d < plan.nd; ++d) {
    plan.size[d] = p.shape[d];
    plan.src[d] = p.src_strides[d];
    plan.dst[d] = p.dst_strides[d];
  }
  plan.src_offset = p.src_offset;
  plan.dst_offset = p.dst_offset;
  cudaStream_t s = current_stream();
  with_word(dtype_size(src.dtype), [&](auto tag) {
    using W = typename decltype(tag)::type;
    FLOCK_LAUNCH(grid_for(n), kThreads, 0, s, strided_copy_kernel<W>)
    (static_cast<const W*>(src.raw()), static_cast<W*>(dst.raw()), n, plan);
  });
  check_launch("strided_copy_kernel");
}

void index_select_cuda(const Tensor& x, const Tensor& index, Tensor& out, int64_t outer, int64_t dim_size, int64_t inner) {
  const int64_t n = index.numel();
  const int64_t total = outer * n * inner;
  if (total == 0) return;
  cudaStream_t s = current_stream();
  IndexFault* fault = current_index_fault();
  with_word(dtype_size(x.dtype), [&](auto tag) {
    using W = typename decltype(tag)::type;
    FLOCK_LAUNCH(grid_for(total), kThreads, 0, s, index_select_kernel<W>)
    (static_cast<const W*>(x.raw()), index.raw(), index.dtype == DType::i64, static_cast<W*>(out.raw()), outer, n, dim_size,
     inner, fault);
  });
  check_launch("index_select_kernel");
}

void gather_cuda(const Tensor& x, const Tensor& index, Tensor& out, int64_t dim) {
  const int64_t n = index.numel();
  if (n == 0) return;
  const IndexPlan g = make_index_plan("gather", x.shape, index.shape, dim);
  cudaStream_t s = current_stream();
  IndexFault* fault = current_index_fault();
  with_word(dtype_size(x.dtype), [&](auto tag) {
    using W = typename decltype(tag)::type;
    FLOCK_LAUNCH(grid_for(n), kThreads, 0, s, gather_kernel<W>)
    (static_cast<const W*>(x.raw()), index.raw(), index.dtype == DType::i64, static_cast<W*>(out.raw()), n, g, fault);
  });
  check_launch("gather_kernel");
}

void scatter_add_cuda(Tensor& out, const Tensor& index, const Tensor& src, int64_t dim) {
  const int64_t n = index.numel();
  if (n == 0) return;
  const IndexPlan g = make_index_plan("scatterAdd", out.shape, index.shape, dim);
  cudaStream_t s = current_stream();
  IndexFault* fault = current_index_fault();
  visit_numeric(out.dtype, "scatterAdd", [&](auto tag) {
    using T = typename decltype(tag)::type;
    FLOCK_LAUNCH(grid_for(n), kThreads, 0, s, scatter_add_kernel<T>)
    (out.data<T>(), index.raw(), index.dtype == DType::i64, src.data<T>(), n, g, fault);
  });
  check_launch("scatter_add_kernel");
}

// Host transfers go through the stream's pinned staging buffer: a copy from pageable memory may
// hold the calling (JS) thread until the stream has drained, a copy to pinned memory does not.
// The host side of each chunk is a memcpy run by a host function in stream order, after the
// device-to-host copy it follows or before the host-to-device copy it feeds; the staging buffer
// is reused chunk after chunk because the stream never runs two of these steps at once. The
// task that queued them keeps the caller's host buffer alive until the stream has passed them.
struct HostCopy {
  void* dst;
  const void* src;
  size_t bytes;
};

void CUDART_CB run_host_copy(void* arg) {
  std::unique_ptr<HostCopy> c(static_cast<HostCopy*>(arg));
  std::memcpy(c->dst, c->src, c->bytes);
}

void queue_host_copy(void* dst, const void* src, size_t bytes, cudaStream_t s) {
  auto* c = new HostCopy{dst, src, bytes};
  const cudaError_t e = cudaLaunchHostFunc(s, run_host_copy, c);
  if (e != cudaSuccess) {
    delete c;
    check(e, "cudaLaunchHostFunc");
  }
}

// One thread per index: out was zeroed in stream order before this runs.
__global__ void one_hot_kernel(const void* index, bool wide, int64_t* out, int64_t n, int64_t num_classes, IndexFault* fault) {
  FLOCK_GRID_STRIDE(i, n) {
    const int64_t k = read_index(index, wide, i);
    if (k < 0 || k >= num_classes) {
      report_fault(fault, kOneHot, k, num_classes);
      continue;
    }
    out[i * num_classes + k] = 1;
  }
}

void one_hot_cuda(const Tensor& index, Tensor& out, int64_t num_classes) {
  const int64_t n = index.numel();
  if (n == 0) return;
  cudaStream_t s = current_stream();
  if (out.nbytes() > 0) check(cudaMemsetAsync(out.raw(), 0, out.nbytes(), s), "cudaMemsetAsync");
  FLOCK_LAUNCH(grid_for(n), kThreads, 0, s, one_hot_kernel)
  (index.raw(), index.dtype == DType::i64, out.data<int64_t>(), n, num_classes, current_index_fault());
  check_launch("one_hot_kernel");
}

void copy_to_host_cuda(const Tensor& src, void* host) {
  const size_t bytes = src.nbytes();
  if (bytes == 0) return;
  cudaStream_t s = current_stream();
  const Staging st = current_staging(bytes);
  if (!st.data) {  // no pinned memory to be had: the runtime stages pageable memory itself
    check(cudaMemcpyAsync(host, src.raw(), bytes, cudaMemcpyDeviceToHost, s), "copy_to_host: cudaMemcpyAsync");
    return;
  }
  const char* from = static_cast<const char*>(src.raw());
  char* to = static_cast<char*>(host);
  for (size_t off = 0; off < bytes; off += st.bytes) {
    const size_t n = std::min(st.bytes, bytes - off);
    check(cudaMemcpyAsync(st.data, from + off, n, cudaMemcpyDeviceToHost, s), "copy_to_host: cudaMemcpyAsync");
    queue_host_copy(to + off, st.data, n, s);
  }
}

void copy_from_host_cuda(const void* host, Tensor& dst) {
  const size_t bytes = dst.nbytes();
  if (bytes == 0) return;
  cudaStream_t s = current_stream();
  const Staging st = current_staging(bytes);
  if (!st.data) {
    check(cudaMemcpyAsync(dst.raw(), host, bytes, cudaMemcpyHostToDevice, s), "copy_from_host: cudaMemcpyAsync");
    return;
  }
  const char* from = static_cast<const char*>(host);
  char* to = static_cast<char*>(dst.raw());
  for (size_t off = 0; off < bytes; off += st.bytes) {
    const size_t n = std::min(st.bytes, bytes - off);
    queue_host_copy(st.data, from + off, n, s);
    check(cudaMemcpyAsync(to + off, st.data, n, cudaMemcpyHostToDevice, s), "copy_from_host: cudaMemcpyAsync");
  }
}

// Runs on the source's stream (to_device picks the GPU side, the source for CUDA->CUDA). For a
// peer copy the destination was allocated on its own device's stream, so the copy waits for
// that stream first and that stream then waits for the copy: work queued there later sees it.
void transfer_cuda(const Tensor& src, Tensor& dst) {
  const size_t bytes = src.nbytes();
  if (bytes == 0) return;
  if (bytes != dst.nbytes()) fail(Code::Internal, "transfer: source and destination sizes differ");
  cudaStream_t s = current_stream();
  const Device sd = src.device(), dd = dst.device();
  if (sd.is_cpu()) {
    check(cudaMemcpyAsync(dst.raw(), src.raw(), bytes, cudaMemcpyHostToDevice, s), "transfer: cudaMemcpyAsync");
    return;
  }
  if (dd.is_cpu()) {
    check(cudaMemcpyAsync(dst.raw(), src.raw(), bytes, cudaMemcpyDeviceToHost, s), "transfer: cudaMemcpyAsync");
    return;
  }
  if (sd.index == dd.index) {
    check(cudaMemcpyAsync(dst.raw(), src.raw(), bytes, cudaMemcpyDeviceToDevice, s), "transfer: cudaMemcpyAsync");
    return;
  }
  cudaStream_t other = context_stream(dd.index);
  cudaEvent_t before = nullptr, after = nullptr;
  // An event must be recorded on a stream of the device it was created on.
  cudaError_t e;
  {
    DeviceGuard g(dd.index);
    e = cudaEventCreateWithFlags(&before, cudaEventDisableTiming);
    if (e == cudaSuccess) e = cudaEventRecord(before, other);
  }
  if (e == cudaSuccess) e = cudaEventCreateWithFlags(&after, cudaEventDisableTiming);
  if (e == cudaSuccess) e = cudaStreamWaitEvent(s, before, 0);
  if (e == cudaSuccess) e = cudaMemcpyPeerAsync(dst.raw(), dd.index, src.raw(), sd.index, bytes, s);
  if (e == cudaSuccess) e = cudaEventRecord(after, s);
  if (e == cudaSuccess) e = cudaStreamWaitEvent(other, after, 0);
  // Destroying a recorded event is safe: its resources are released once the work completes.
  if (before) cudaEventDestroy(before);
  if (after) cudaEventDestroy(after);
  check(e, "transfer: cudaMemcpyPeerAsync");
}

}  // namespace

FLOCK_REGISTER_KERNEL(copy_to_host, CUDA, copy_to_host_cuda);
FLOCK_REGISTER_KERNEL(copy_from_host, CUDA, copy_from_host_cuda);
FLOCK_REGISTER_KERNEL(strided_copy, CUDA, strided_copy_cuda);
FLOCK_REGISTER_KERNEL(index_select, CUDA, index_select_cuda);
FLOCK_REGISTER_KERNEL(gather, CUDA, gather_cuda);
FLOCK_REGISTER_KERNEL(scatter_add, CUDA, scatter_add_cuda);
FLOCK_REGISTER_KERNEL(one_hot, CUDA, one_hot_cuda);
FLOCK_REGISTER_KERNEL(transfer, CUDA, transfer_cuda);

}  // namespace flock::cuda
