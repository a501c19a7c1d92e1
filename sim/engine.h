// The kernel engine's internals: a block's simulated threads, its barriers and its warps, and
// the per-OS-thread worker that runs one block at a time on a set of reusable fibers.
// sim/engine_block.cc schedules a block, sim/engine_warp.cc holds the collectives and the mma
// twins, sim/engine_grid.cc spreads a grid's blocks over the worker pool.
#pragma once
#include <boost/context/detail/fcontext.hpp>
#include <boost/context/stack_context.hpp>
#include <functional>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <vector>
#include "kernel_abi.h"

namespace sim::engine {

// A suspended execution context. Switches go straight from one simulated thread to the next
// (boost.context's fcontext jump, a few ns): parking at a barrier hands the worker to the next
// ready or unstarted thread, not back to a scheduler loop.
struct Ctx {
  boost::context::detail::fcontext_t fctx = nullptr;
};

// A fiber outlives blocks and launches: when its thread finishes it takes the block's next
// unstarted thread itself, so a kernel without collectives runs all its threads on one fiber
// with no switch at all, and fibers (stacks included) are made once per worker, not per launch.
struct Fiber {
  Ctx ctx;
  boost::context::stack_context stack;
  struct Block* block = nullptr;
};

enum class State : uint8_t { Unstarted, Running, Ready, AtBlockBarrier, AtWarp, Done };

struct Thread {
  State state;
  uint3 idx;  // threadIdx
  Fiber* fiber;
};

// Lanes deposit into slots[parity] and read it after the barrier; the next collective uses the
// other half, so a lane released first cannot overwrite what a slower lane has yet to read.
struct Warp {
  uint32_t exists;   // lanes the block has (the last warp may be partial)
  uint32_t arrived;  // lanes waiting at the current collective
  uint32_t mask;     // that collective's mask, as its first lane gave it
  detail::WarpOp op;
  uint8_t parity;
  detail::WarpSlot slots[2][32];
};

struct Block {
  struct Worker* worker = nullptr;
  const LaunchCfg* cfg = nullptr;
  const std::function<void()>* body = nullptr;
  uint3 idx{};
  unsigned n = 0;     // threads
  unsigned next = 0;  // first thread not yet started
  uint3 next_idx{};   // its threadIdx
  unsigned done = 0;
  std::vector<Thread> threads;
  std::vector<Warp> warps;
  std::vector<unsigned> ready;  // released from a barrier, waiting to be resumed
  size_t ready_head = 0;
  std::vector<unsigned> at_barrier;
  bool aborting = false;  // a fault was found: parked threads unwind instead of continuing
  std::exception_ptr error;

  std::string where() const;                  // "kernel K, block (x,y,z)"
  std::string thread_name(unsigned t) const;  // "thread (x,y,z)"
};

// Thrown into a parked thread when its block aborts, to unwind its fiber back to the loop.
struct Unwind {};

// One per OS thread that runs blocks (pool workers and run_grid callers).
struct Worker {
  Block block;
  Ctx scheduler;  // run_block's own stack, where control returns when no thread can run
  std::vector<std::unique_ptr<Fiber>> fibers;
  std::vector<Fiber*> idle;
  Fiber* entering = nullptr;  // a new fiber's first jump tells it who it is through this
  ~Worker();
};

// Runs block `linear` of the grid on the calling thread; throws KernelFault or what the kernel threw.
void run_block(const LaunchCfg& cfg, const std::function<void()>& body, uint64_t linear);

// The block and thread now running on this OS thread.
extern __thread Block* current_block;
extern __thread unsigned current_thread;

// Switches from the running thread to the next one that can run until this one is resumed;
// throws Unwind if its block aborted meanwhile.
void park(Block& b, unsigned t);
[[noreturn]] void fault(const Block& b, const std::string& what);

}  // namespace sim::engine
