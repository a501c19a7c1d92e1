// The simulator's NVTX: ranges and marks accepted and dropped (no profiler to receive them).
#pragma once

inline int nvtxRangePushA(const char*) { return 0; }
inline int nvtxRangePop() { return 0; }
inline void nvtxMarkA(const char*) {}
typedef unsigned long long nvtxRangeId_t;
inline nvtxRangeId_t nvtxRangeStartA(const char*) { return 0; }
inline void nvtxRangeEnd(nvtxRangeId_t) {}
