// ProcessGroup: the collectives every backend provides. Each call returns at once with a Work;
// the data moves on the backend's own communication thread (or stream), never the caller's.
#pragma once
#include <array>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>
#include "../device.h"
#include "../tensor.h"

namespace flock::dist {

enum class ReduceOp : uint8_t { Sum, Avg, Max, Min, Prod };
constexpr const char* kReduceOpNames[] = {"sum", "avg", "max", "min", "prod"};

// Completion of one collective: `done` runs exactly once, on a backend thread, with the error
// (if any). Bindings turn it into a JS promise.
using Done = std::function<void(std::optional<StreamError>)>;

class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual const char* backend() const = 0;

  // In place on `t`.
  virtual void allreduce(Tensor t, ReduceOp op, Done done) = 0;
  virtual void broadcast(Tensor t, int root, Done done) = 0;
  // `out` holds size() blocks of in.numel() elements, block r from rank r.
  virtual void allgather(Tensor in, Tensor out, Done done) = 0;
  // `in` holds size() blocks of out.numel() elements; rank r receives the reduction of block r.
  virtual void reduce_scatter(Tensor in, Tensor out, ReduceOp op, Done done) = 0;
  virtual void send(Tensor t, int dst, Done done) = 0;
  virtual void recv(Tensor t, int src, Done done) = 0;
  virtual void barrier(Done done) = 0;
  // Fails pending and future work, closes connections; safe to call twice.
  virtual void abort(const std::string& why) = 0;
  // Bounds how long a collective may wait on its peers before it fails with ERR_TIMEOUT.
  virtual void set_timeout(int timeout_ms) = 0;
  // False: the caller waits for the compute queued on the tensors' stream before issuing (the
  // ring reads host memory). True: the group orders itself behind that stream on the device and
  // must be called on the JS thread that owns the stream (nccl).
  virtual bool orders_on_device() const { return false; }
};

struct PeerAddress {
  std::string host;
  int port = 0;
};

// The ring (TCP, CPU tensors) backend in two steps so that addresses can be exchanged in between:
// listen() binds a port now; connect() runs on the communication thread and calls `done`.
class RingGroup : public ProcessGroup {
 public:
  // `name` identifies the group in error messages ("group 1 (ranks 0, 2)").
  static std::shared_ptr<RingGroup> listen(int rank, int size, const std::string& bind_host, int timeout_ms,
                                           std::string name = "");
  virtual int port() const = 0;
  // `shm_name` non-empty: every rank is on this host, and collectives go through the shared-memory
  // segment of that name (rank 0 creates it) instead of TCP. With `host_of` (the host index of
  // each rank, numbered in order of first appearance) the ranks span hosts: shared memory within
  // each host (segment `shm_name`-h<index>), TCP between them (hier_group.h).
  virtual void connect(std::vector<PeerAddress> peers, std::string shm_name, std::vector<int> host_of, Done done) = 0;
  virtual const char* transport() const = 0;  // "shm", "shm+tcp" or "tcp"
};

// NCCL, found at run time. available() explains why not when it is not.
bool nccl_available(std::string* why);
std::string nccl_version();

using NcclId = std::array<char, 128>;
// A fresh ncclUniqueId (rank 0 makes it; the store hands it to the others). ERR_NCCL when the
// backend is unavailable, with the reason.
NcclId nccl_unique_id();

// The nccl backend's constructors, filled in by cuda/nccl_init.cu when flockml is built with
// CUDA; empty in a CPU-only build. Both return at once: the communicators are created on a
// thread of their own and `ready` runs exactly once when that has finished (or failed, or the
// group was destroyed first). Collectives are refused until then.
struct NcclBackend {
  // This process's member of a group of `size` processes (ncclCommInitRank on CUDA `device`).
  std::shared_ptr<ProcessGroup> (*init_rank)(int rank, int size, int device, const NcclId& id, int timeout_ms,
                                             Done ready) = nullptr;
  // One group member per device, all driven by this process (ncclCommInitAll): rank i on devices[i].
  std::vector<std::shared_ptr<ProcessGroup>> (*init_all)(const std::vector<int>& devices, int timeout_ms, Done ready) = nullptr;
};
NcclBackend& nccl_backend();

}  // namespace flock::dist
