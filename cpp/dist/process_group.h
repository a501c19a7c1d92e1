// ProcessGroup: the collectives every backend provides. Each call returns at once with a Work;
// the data moves on the backend's own communication thread (or stream), never the caller's.
#pragma once
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
};

struct PeerAddress {
  std::string host;
  int port = 0;
};

// The ring (TCP, CPU tensors) backend in two steps so that addresses can be exchanged in between:
// listen() binds a port now; connect() runs on the communication thread and calls `done`.
class RingGroup : public ProcessGroup {
 public:
  static std::shared_ptr<RingGroup> listen(int rank, int size, const std::string& bind_host, int timeout_ms);
  virtual int port() const = 0;
  virtual void connect(std::vector<PeerAddress> peers, Done done) = 0;
  virtual void set_timeout(int timeout_ms) = 0;
};

// NCCL, found at run time. available() explains why not when it is not.
bool nccl_available(std::string* why);
std::string nccl_version();

}  // namespace flock::dist
