// FLOCK_HD: a scalar formula callable from CPU kernels and, under nvcc, from CUDA device code.
#pragma once

#ifdef __CUDACC__
#define FLOCK_HD __host__ __device__ __forceinline__
#else
// Always inlined: kernels call these with a compile-time op, and only once inlined does the switch
// fold away and the loop around it vectorise.
#define FLOCK_HD inline __attribute__((always_inline))
#endif
