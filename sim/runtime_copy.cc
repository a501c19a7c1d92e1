// memcpy and memset, synchronous and stream-ordered. Both ends of a copy are checked against the
// allocation registry: a declared device end must be device (or mapped pinned) memory, a range
// must fit inside its allocation, a peer copy's ends must be on the devices named. As on a GPU,
// a D2H copy into pageable memory blocks the caller until done; a copy from pageable memory
// takes its bytes at the call (CUDA stages them), so the caller may reuse the buffer at once.
#include <cstring>
#include <vector>
#include "runtime_state.h"

namespace sim::rt {
namespace {

struct End {
  bool device = false;  // device memory
  bool pinned = false;
  int dev = -1;
};

// The allocation a range lies in; false when it starts in one and runs past its end.
bool classify(const void* p, size_t n, End* e) {
  auto a = find_alloc(p);
  if (!a) return true;  // pageable host memory
  if (reinterpret_cast<uintptr_t>(p) + n > a->base + a->size && n > 0) return false;
  e->pinned = a->kind == Kind::Pinned;
  e->device = !e->pinned;
  e->dev = a->device;
  return true;
}

cudaError_t check_kind(cudaMemcpyKind kind, const End& dst, const End& src) {
  const bool dst_dev_ok = dst.device || dst.pinned, src_dev_ok = src.device || src.pinned;
  switch (kind) {
    case cudaMemcpyHostToHost:
      return (dst.device || src.device) ? cudaErrorInvalidValue : cudaSuccess;
    case cudaMemcpyHostToDevice:
      return (src.device || !dst_dev_ok) ? cudaErrorInvalidValue : cudaSuccess;
    case cudaMemcpyDeviceToHost:
      return (!src_dev_ok || dst.device) ? cudaErrorInvalidValue : cudaSuccess;
    case cudaMemcpyDeviceToDevice:
      return (!src_dev_ok || !dst_dev_ok) ? cudaErrorInvalidValue : cudaSuccess;
    case cudaMemcpyDefault:
      return cudaSuccess;
  }
  return cudaErrorInvalidMemcpyDirection;
}

// Queues the copy on `s` and, for a pageable destination, waits for it.
cudaError_t queue_copy(const StreamPtr& s, void* dst, const void* src, size_t n, const End& d, const End& sr, bool sync) {
  for (const End* e : {&d, &sr})
    if (e->device)
      if (cudaError_t err = sticky_error(e->dev)) return err;
  if (cudaError_t err = sticky_error(s->device)) return err;
  if (n == 0) return cudaSuccess;
  const bool src_pageable = !sr.device && !sr.pinned;
  const bool dst_pageable = !d.device && !d.pinned;
  Op op;
  if (src_pageable) {
    auto staged = std::make_shared<std::vector<unsigned char>>(static_cast<const unsigned char*>(src),
                                                               static_cast<const unsigned char*>(src) + n);
    op.run = [dst, staged] { std::memcpy(dst, staged->data(), staged->size()); };
  } else {
    op.run = [dst, src, n] { std::memmove(dst, src, n); };
  }
  const uint64_t ticket = enqueue(s, std::move(op));
  if (sync || dst_pageable) {
    wait_ticket(s, ticket);
    return sticky_error(s->device);
  }
  return cudaSuccess;
}

cudaError_t copy(void* dst, const void* src, size_t n, cudaMemcpyKind kind, cudaStream_t stream, bool sync) {
  if ((!dst || !src) && n > 0) return cudaErrorInvalidValue;
  End d, sr;
  if (!classify(dst, n, &d) || !classify(src, n, &sr)) return cudaErrorInvalidValue;
  if (cudaError_t e = check_kind(kind, d, sr)) return e;
  cudaError_t err = cudaSuccess;
  StreamPtr s = resolve_stream(stream, &err);
  if (!s) return err;
  return queue_copy(s, dst, src, n, d, sr, sync);
}

cudaError_t peer_copy(void* dst, int dd, const void* src, int sd, size_t n, cudaStream_t stream, bool sync) {
  if (!valid_device(dd) || !valid_device(sd)) return cudaErrorInvalidDevice;
  if ((!dst || !src) && n > 0) return cudaErrorInvalidValue;
  End d, sr;
  if (!classify(dst, n, &d) || !classify(src, n, &sr)) return cudaErrorInvalidValue;
  if (n > 0 && (!d.device || d.dev != dd || !sr.device || sr.dev != sd)) return cudaErrorInvalidValue;
  cudaError_t err = cudaSuccess;
  StreamPtr s = resolve_stream(stream, &err);
  if (!s) return err;
  return queue_copy(s, dst, src, n, d, sr, sync);
}

cudaError_t set(void* dst, int value, size_t n, cudaStream_t stream) {
  if (!dst && n > 0) return cudaErrorInvalidValue;
  End d;
  if (!classify(dst, n, &d)) return cudaErrorInvalidValue;
  if (n > 0 && !d.device && !d.pinned) return cudaErrorInvalidValue;  // pageable memory: not the device's
  cudaError_t err = cudaSuccess;
  StreamPtr s = resolve_stream(stream, &err);
  if (!s) return err;
  if (d.device)
    if (cudaError_t e = sticky_error(d.dev)) return e;
  if (cudaError_t e = sticky_error(s->device)) return e;
  if (n == 0) return cudaSuccess;
  Op op;
  op.run = [dst, value, n] { std::memset(dst, value, n); };
  enqueue(s, std::move(op));
  return cudaSuccess;
}

}  // namespace
}  // namespace sim::rt

using namespace sim::rt;

extern "C" {

// Synchronous copies run on the legacy stream of the current device and wait for it.
cudaError_t cudaMemcpy(void* dst, const void* src, size_t n, cudaMemcpyKind kind) {
  if (cudaError_t e = enter("cudaMemcpy")) return e;
  return record(copy(dst, src, n, kind, nullptr, true));
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t n, cudaMemcpyKind kind, cudaStream_t stream) {
  if (cudaError_t e = enter("cudaMemcpyAsync")) return e;
  return record(copy(dst, src, n, kind, stream, false));
}

cudaError_t cudaMemcpyPeer(void* dst, int dd, const void* src, int sd, size_t n) {
  if (cudaError_t e = enter("cudaMemcpyPeer")) return e;
  return record(peer_copy(dst, dd, src, sd, n, nullptr, true));
}

cudaError_t cudaMemcpyPeerAsync(void* dst, int dd, const void* src, int sd, size_t n, cudaStream_t stream) {
  if (cudaError_t e = enter("cudaMemcpyPeerAsync")) return e;
  return record(peer_copy(dst, dd, src, sd, n, stream, false));
}

// Asynchronous for device memory, as CUDA documents; ordered by the legacy stream.
cudaError_t cudaMemset(void* dst, int value, size_t n) {
  if (cudaError_t e = enter("cudaMemset")) return e;
  return record(set(dst, value, n, nullptr));
}

cudaError_t cudaMemsetAsync(void* dst, int value, size_t n, cudaStream_t stream) {
  if (cudaError_t e = enter("cudaMemsetAsync")) return e;
  return record(set(dst, value, n, stream));
}

}  // extern "C"
