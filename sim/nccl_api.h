// The simulated NCCL's C API (sim/nccl_api.cc): the 17 functions flockml loads with dlsym, with
// NCCL 2.x's signatures. Default visibility, so they are exported from an addon compiled with
// -fvisibility=hidden.
#pragma once
#include "nccl_types.h"

#define FLOCK_NCCL_API extern "C" __attribute__((visibility("default")))

FLOCK_NCCL_API ncclResult_t ncclGetVersion(int* version);
FLOCK_NCCL_API const char* ncclGetErrorString(ncclResult_t result);
FLOCK_NCCL_API ncclResult_t ncclGetUniqueId(ncclUniqueId* id);
FLOCK_NCCL_API ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank);
FLOCK_NCCL_API ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank, ncclConfig_t* config);
FLOCK_NCCL_API ncclResult_t ncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist);
FLOCK_NCCL_API ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* async_error);
FLOCK_NCCL_API ncclResult_t ncclCommAbort(ncclComm_t comm);
FLOCK_NCCL_API ncclResult_t ncclCommDestroy(ncclComm_t comm);
FLOCK_NCCL_API ncclResult_t ncclGroupStart();
FLOCK_NCCL_API ncclResult_t ncclGroupEnd();
FLOCK_NCCL_API ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                          ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
FLOCK_NCCL_API ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                                          ncclComm_t comm, cudaStream_t stream);
FLOCK_NCCL_API ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                                          ncclComm_t comm, cudaStream_t stream);
FLOCK_NCCL_API ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype,
                                              ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
FLOCK_NCCL_API ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                                     cudaStream_t stream);
FLOCK_NCCL_API ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                                     cudaStream_t stream);
