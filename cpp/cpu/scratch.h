// Scratch memory for CPU kernels: a 64-byte aligned array that grows on demand and is kept, so a
// kernel called every step (GEMM packing, convolution columns) neither allocates nor page-faults
// on each call. Kernels hold them thread_local.
#pragma once
#include <cstddef>
#include <cstdlib>
#include <new>

namespace flock::cpu {

template <class T>
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  ~AlignedBuffer() { std::free(p_); }
  // Room for n elements; previous contents are not kept.
  T* reserve(size_t n) {
    if (n > n_) {
      std::free(p_);
      p_ = static_cast<T*>(std::aligned_alloc(64, (n * sizeof(T) + 63) / 64 * 64));
      if (!p_) {
        n_ = 0;
        throw std::bad_alloc();
      }
      n_ = n;
    }
    return p_;
  }
  T* data() { return p_; }

 private:
  T* p_ = nullptr;
  size_t n_ = 0;
};

}  // namespace flock::cpu
