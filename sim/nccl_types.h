// The C types of NCCL 2.x's API, as the simulated NCCL (sim/nccl_*.cc) exports them: the values
// are nccl.h's, so flockml's own declarations (cpp/distributed/nccl.h) bind to them unchanged.
#pragma once
#include <cstddef>

extern "C" {

typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7,
  ncclNumResults = 8
} ncclResult_t;

typedef enum {
  ncclInt8 = 0,
  ncclUint8 = 1,
  ncclInt32 = 2,
  ncclUint32 = 3,
  ncclInt64 = 4,
  ncclUint64 = 5,
  ncclFloat16 = 6,
  ncclFloat32 = 7,
  ncclFloat64 = 8,
  ncclBfloat16 = 9,
  ncclNumTypes = 10
} ncclDataType_t;

typedef enum { ncclSum = 0, ncclProd = 1, ncclMax = 2, ncclMin = 3, ncclAvg = 4, ncclNumOps = 5 } ncclRedOp_t;

#define NCCL_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

// ncclConfig_t as of NCCL 2.14 (the fields flockml sets). NCCL reads only the fields the
// caller's `size`/`version` cover; so do we (we read `blocking` and nothing after it).
typedef struct {
  size_t size;
  unsigned int magic;
  unsigned int version;
  int blocking;
  int cgaClusterSize;
  int minCTAs;
  int maxCTAs;
  const char* netName;
} ncclConfig_t;

typedef struct ncclComm* ncclComm_t;
typedef struct CUstream_st* cudaStream_t;

}  // extern "C"

namespace sim::nccl {
constexpr unsigned kConfigMagic = 0xcafebeef;
constexpr int kConfigUndefInt = -2147483647 - 1;
constexpr int kVersion = 21903;  // what ncclGetVersion reports: the 2.19.3 API, simulated
}  // namespace sim::nccl
