// The simulator's <cuda_runtime.h> (FLOCKML_CUDA=SIM builds): the C API plus the C++ conveniences
// the toolkit's header adds (typed-pointer overloads, cudaEventCreate with flags), so flockml's
// cuda/*.cu compile unchanged as host C++. Declarations only; sim/runtime_*.cc implement them.
#pragma once
#include "cuda_runtime_api.h"

template <class T>
inline cudaError_t cudaMalloc(T** devPtr, size_t size) {
  return ::cudaMalloc(reinterpret_cast<void**>(devPtr), size);
}
template <class T>
inline cudaError_t cudaMallocAsync(T** devPtr, size_t size, cudaStream_t stream) {
  return ::cudaMallocAsync(reinterpret_cast<void**>(devPtr), size, stream);
}
inline cudaError_t cudaMallocHost(void** ptr, size_t size, unsigned int flags) { return ::cudaHostAlloc(ptr, size, flags); }
template <class T>
inline cudaError_t cudaMallocHost(T** ptr, size_t size, unsigned int flags = 0) {
  return ::cudaHostAlloc(reinterpret_cast<void**>(ptr), size, flags);
}
template <class T>
inline cudaError_t cudaHostAlloc(T** ptr, size_t size, unsigned int flags) {
  return ::cudaHostAlloc(reinterpret_cast<void**>(ptr), size, flags);
}
template <class T>
inline cudaError_t cudaHostGetDevicePointer(T** pDevice, void* pHost, unsigned int flags) {
  return ::cudaHostGetDevicePointer(reinterpret_cast<void**>(pDevice), pHost, flags);
}
inline cudaError_t cudaEventCreate(cudaEvent_t* event, unsigned int flags) { return ::cudaEventCreateWithFlags(event, flags); }
