// Our own declarations of the slice of NCCL flockml calls, so building needs no NCCL: the library
// is opened at run time (libnccl.so.2, or FLOCKML_NCCL_PATH). Values follow nccl.h (2.x).
#pragma once
#include <cstddef>
#include <string>

namespace flock::dist::nccl {

enum Result {
  Success = 0,
  UnhandledCudaError = 1,
  SystemError = 2,
  InternalError = 3,
  InvalidArgument = 4,
  InvalidUsage = 5,
  RemoteError = 6,
  InProgress = 7
};
enum DataType {
  Int8 = 0,
  Uint8 = 1,
  Int32 = 2,
  Uint32 = 3,
  Int64 = 4,
  Uint64 = 5,
  Float16 = 6,
  Float32 = 7,
  Float64 = 8,
  Bfloat16 = 9
};
enum RedOp { Sum = 0, Prod = 1, Max = 2, Min = 3, Avg = 4 };

struct UniqueId {
  char internal[128];
};

// ncclConfig_t as NCCL 2.14 declared it (ncclConfig_v21400): a header NCCL checks (size, magic,
// version) and the fields of that release. NCCL reads only what `size` and `version` say the
// caller knows and gives every later field its default, so a newer library accepts it. Fields
// left at kConfigUndefInt take NCCL's default.
constexpr int kConfigUndefInt = -2147483647 - 1;  // NCCL_CONFIG_UNDEF_INT (INT_MIN)
constexpr unsigned kConfigMagic = 0xcafebeef;
constexpr unsigned kConfigVersion = 21400;  // NCCL_VERSION(2, 14, 0)
struct Config {
  size_t size = sizeof(Config);
  unsigned int magic = kConfigMagic;
  unsigned int version = kConfigVersion;
  int blocking = kConfigUndefInt;  // 0: calls return InProgress instead of blocking
  int cgaClusterSize = kConfigUndefInt;
  int minCTAs = kConfigUndefInt;
  int maxCTAs = kConfigUndefInt;
  const char* netName = nullptr;
};
// The layout NCCL 2.14's nccl.h gives ncclConfig_t on LP64 targets.
static_assert(offsetof(Config, magic) == 8 && offsetof(Config, version) == 12 && offsetof(Config, blocking) == 16 &&
                  offsetof(Config, netName) == 32 && sizeof(Config) == 40,
              "nccl::Config must match ncclConfig_t (NCCL 2.14)");
using Comm = struct CommOpaque*;
using CudaStream = void*;

struct Api {
  Result (*GetVersion)(int*);
  const char* (*GetErrorString)(Result);
  Result (*GetUniqueId)(UniqueId*);
  Result (*CommInitRank)(Comm*, int nranks, UniqueId id, int rank);
  Result (*CommInitAll)(Comm*, int ndev, const int* devlist);
  // NCCL 2.14+: with Config::blocking = 0, init and later calls return InProgress at once and
  // CommGetAsyncError says when they are done, so nothing waits on a peer that never comes.
  Result (*CommInitRankConfig)(Comm*, int nranks, UniqueId id, int rank, Config* config);
  Result (*AllReduce)(const void*, void*, size_t count, DataType, RedOp, Comm, CudaStream);
  Result (*Broadcast)(const void*, void*, size_t count, DataType, int root, Comm, CudaStream);
  Result (*AllGather)(const void*, void*, size_t sendcount, DataType, Comm, CudaStream);
  Result (*ReduceScatter)(const void*, void*, size_t recvcount, DataType, RedOp, Comm, CudaStream);
  Result (*Send)(const void*, size_t count, DataType, int peer, Comm, CudaStream);
  Result (*Recv)(void*, size_t count, DataType, int peer, Comm, CudaStream);
  Result (*GroupStart)();
  Result (*GroupEnd)();
  Result (*CommGetAsyncError)(Comm, Result*);
  Result (*CommAbort)(Comm);
  Result (*CommDestroy)(Comm);
};

// The loaded library, or null with *why saying what is missing. Loaded once per process.
const Api* load(std::string* why);

}  // namespace flock::dist::nccl
