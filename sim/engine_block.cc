// One block of a grid on the calling OS thread: its threads run on fibers in thread order, each
// until it finishes or parks at a barrier; a barrier's last arriving thread releases the others
// and keeps running. When nothing can run and threads remain, the block is stuck, which on a GPU
// is a hang or undefined behaviour: here it is a KernelFault naming the kernel, block and threads.
#include <boost/context/protected_fixedsize_stack.hpp>
#include <cstdlib>
#include "engine.h"

namespace sim {
namespace detail {
__thread Regs regs;
}  // namespace detail

namespace engine {

__thread Block* current_block;
__thread unsigned current_thread;

namespace {

// Kernels here are small (a few KiB of locals and parameters); FLOCKML_CUDA_SIM_STACK_KB raises
// it for sanitizer builds. Stacks are mapped once per fiber with a guard page below.
size_t stack_bytes() {
  static const size_t bytes = [] {
    const char* env = std::getenv("FLOCKML_CUDA_SIM_STACK_KB");
    const long kb = env ? std::atol(env) : 0;
    return static_cast<size_t>(kb >= 16 ? kb : 64) * 1024;
  }();
  return bytes;
}

Worker& this_worker() {
  static thread_local Worker w;
  return w;
}

namespace fc = boost::context::detail;

// Suspends `from` and continues `to`; returns when something jumps back to `from`. Whoever jumps
// passes its own Ctx, and the arriving side stores the context it left there.
void jump(Ctx& from, Ctx& to) {
  const fc::transfer_t t = fc::jump_fcontext(to.fctx, &from);
  static_cast<Ctx*>(t.data)->fctx = t.fctx;
}

// Runs the block's next unstarted thread on fiber `f` until it returns or unwinds.
void run_thread(Block& b, Fiber& f) {
  const unsigned t = b.next++;
  Thread& th = b.threads[t];
  th.state = State::Running;
  th.fiber = &f;
  th.idx = b.next_idx;
  if (++b.next_idx.x == b.cfg->block.x) {
    b.next_idx.x = 0;
    if (++b.next_idx.y == b.cfg->block.y) {
      b.next_idx.y = 0;
      ++b.next_idx.z;
    }
  }
  current_thread = t;
  detail::regs.thread_idx = th.idx;
  try {
    (*b.body)();
  } catch (const Unwind&) {
  } catch (...) {
    if (!b.error) b.error = std::current_exception();
    b.aborting = true;
  }
  b.threads[t].state = State::Done;
  ++b.done;
}

Fiber* idle_fiber(Worker& w);

// Leaves `from` for the next thing that can run: a released thread, else a fiber to start the
// next unstarted thread, else the scheduler (block done, or stuck).
void dispatch(Worker& w, Ctx& from) {
  Block& b = w.block;
  if (b.ready_head < b.ready.size()) {
    const unsigned u = b.ready[b.ready_head++];
    if (b.ready_head == b.ready.size()) {
      b.ready.clear();
      b.ready_head = 0;
    }
    Thread& th = b.threads[u];
    th.state = State::Running;
    current_thread = u;
    detail::regs.thread_idx = th.idx;
    jump(from, th.fiber->ctx);
  } else if (b.next < b.n && !b.aborting) {
    Fiber* f = idle_fiber(w);
    f->block = &b;
    jump(from, f->ctx);
  } else {
    jump(from, w.scheduler);
  }
}

[[noreturn]] void fiber_loop(Worker& w, Fiber& f) {
  for (;;) {
    Block& b = *f.block;
    while (b.next < b.n && !b.aborting) run_thread(b, f);
    w.idle.push_back(&f);
    dispatch(w, f.ctx);  // back here when a later block picks this fiber again
  }
}

void fiber_entry(fc::transfer_t t) {
  static_cast<Ctx*>(t.data)->fctx = t.fctx;
  Worker& w = this_worker();  // a fiber never leaves the OS thread that made it
  fiber_loop(w, *w.entering);
}

boost::context::protected_fixedsize_stack stack_allocator() { return boost::context::protected_fixedsize_stack(stack_bytes()); }

Fiber* idle_fiber(Worker& w) {
  if (!w.idle.empty()) {
    Fiber* f = w.idle.back();
    w.idle.pop_back();
    return f;
  }
  w.fibers.push_back(std::make_unique<Fiber>());
  Fiber* f = w.fibers.back().get();
  f->stack = stack_allocator().allocate();
  // Stacks are 4 KiB-aligned, so every fiber's hot top frames would share the same few L1 sets
  // and evict each other at every switch; starting each one at a different cache line spreads them.
  const size_t skew = (w.fibers.size() % 64) * 64;
  f->ctx.fctx = fc::make_fcontext(static_cast<char*>(f->stack.sp) - skew, f->stack.size - skew, fiber_entry);
  w.entering = f;
  return f;
}

const char* op_name(detail::WarpOp op) {
  switch (op) {
    case detail::WarpOp::Shuffle:
      return "a shuffle";
    case detail::WarpOp::Vote:
      return "a vote";
    case detail::WarpOp::Sync:
      return "__syncwarp";
    case detail::WarpOp::MmaBf16:
      return "mma.sync (bf16)";
    case detail::WarpOp::MmaF16:
      return "mma.sync (f16)";
    case detail::WarpOp::MmaTf32:
      return "mma.sync (tf32)";
  }
  return "a warp collective";
}

// Why no thread can run although some have not finished.
std::string stuck_message(const Block& b) {
  for (size_t wi = 0; wi < b.warps.size(); ++wi) {
    const Warp& w = b.warps[wi];
    if (!w.arrived) continue;
    const uint32_t missing = w.mask & w.exists & ~w.arrived;
    const unsigned first = static_cast<unsigned>(wi * 32 + __builtin_ctz(w.arrived));
    for (unsigned lane = 0; lane < 32; ++lane) {
      if (!((missing >> lane) & 1u)) continue;
      const unsigned t = static_cast<unsigned>(wi * 32 + lane);
      const std::string waiting = std::to_string(__builtin_popcount(w.arrived)) + " lanes of warp " + std::to_string(wi) +
                                  " (first " + b.thread_name(first) + ") wait at " + op_name(w.op);
      if (b.threads[t].state == State::Done)
        return "warp collective with exited lanes: " + waiting + " but lane " + std::to_string(lane) + " (" + b.thread_name(t) +
               ") exited without reaching it";
      return "deadlock: " + waiting + " while lane " + std::to_string(lane) + " (" + b.thread_name(t) +
             ") waits at __syncthreads";
    }
  }
  if (!b.at_barrier.empty()) {
    for (unsigned t = 0; t < b.n; ++t)
      if (b.threads[t].state == State::Done)
        return "divergent __syncthreads: " + std::to_string(b.at_barrier.size()) + " threads (first " +
               b.thread_name(b.at_barrier.front()) + ") wait at __syncthreads but " + b.thread_name(t) +
               " exited without reaching it";
  }
  return "deadlock: no thread of the block can run";
}

}  // namespace

std::string Block::where() const {
  return std::string("kernel ") + (cfg && cfg->kernel ? cfg->kernel : "?") + ", block (" + std::to_string(idx.x) + "," +
         std::to_string(idx.y) + "," + std::to_string(idx.z) + ")";
}

std::string Block::thread_name(unsigned t) const {
  const uint3 i = threads[t].idx;
  return "thread (" + std::to_string(i.x) + "," + std::to_string(i.y) + "," + std::to_string(i.z) + ")";
}

// Idle fibers hold no live objects on their stacks (their loop has none), so unmapping is enough.
Worker::~Worker() {
  for (auto& f : fibers) stack_allocator().deallocate(f->stack);
}

void fault(const Block& b, const std::string& what) { throw KernelFault(b.where() + ": " + what); }

namespace {
[[noreturn, gnu::cold, gnu::noinline]] void unwind() { throw Unwind{}; }
}  // namespace

void park(Block& b, unsigned t) {
  dispatch(*b.worker, b.threads[t].fiber->ctx);
  if (b.aborting) unwind();
}

void run_block(const LaunchCfg& cfg, const std::function<void()>& body, uint64_t linear) {
  Worker& w = this_worker();
  Block& b = w.block;
  b.worker = &w;
  const uint64_t gx = cfg.grid.x, gy = cfg.grid.y;
  b.cfg = &cfg;
  b.body = &body;
  b.idx = uint3{static_cast<unsigned>(linear % gx), static_cast<unsigned>(linear / gx % gy),
                static_cast<unsigned>(linear / (gx * gy))};
  b.n = cfg.block.x * cfg.block.y * cfg.block.z;
  b.next = 0;
  b.next_idx = uint3{0, 0, 0};
  b.done = 0;
  b.aborting = false;
  b.error = nullptr;
  b.ready.clear();
  b.at_barrier.clear();
  if (b.threads.size() < b.n) b.threads.resize(b.n);
  const unsigned nw = (b.n + 31) / 32;
  if (b.warps.size() < nw) b.warps.resize(nw);
  for (unsigned i = 0; i < nw; ++i) {
    Warp& wp = b.warps[i];
    const unsigned lanes = b.n - i * 32 < 32 ? b.n - i * 32 : 32;
    wp.exists = lanes == 32 ? 0xffffffffu : (1u << lanes) - 1;
    wp.arrived = 0;
    wp.parity = 0;
  }
  detail::regs.block_idx = b.idx;
  detail::regs.block_dim = uint3{cfg.block.x, cfg.block.y, cfg.block.z};
  detail::regs.grid_dim = uint3{cfg.grid.x, cfg.grid.y, cfg.grid.z};
  current_block = &b;

  b.ready_head = 0;
  for (;;) {
    if (b.ready_head < b.ready.size() || (b.next < b.n && !b.aborting)) {
      dispatch(w, w.scheduler);
      continue;
    }
    if (b.next < b.n) {
      b.done += b.n - b.next;  // aborting: never started, nothing to unwind
      b.next = b.n;
    }
    if (b.done == b.n) break;
    if (!b.aborting) {
      b.error = std::make_exception_ptr(KernelFault(b.where() + ": " + stuck_message(b)));
      b.aborting = true;
    }
    // Resume every parked thread so that it unwinds (park throws Unwind) and frees its fiber.
    for (unsigned t = 0; t < b.n; ++t) {
      State& st = b.threads[t].state;
      if (st == State::AtBlockBarrier || st == State::AtWarp) {
        st = State::Ready;
        b.ready.push_back(t);
      }
    }
  }
  current_block = nullptr;
  if (b.error) std::rethrow_exception(b.error);
}

}  // namespace engine

namespace {
[[noreturn, gnu::cold, gnu::noinline]] void barrier_outside_kernel() {
  throw KernelFault("__syncthreads called outside a simulated kernel");
}
}  // namespace

void detail::block_barrier() {
  engine::Block* bp = engine::current_block;
  if (!bp) barrier_outside_kernel();
  engine::Block& b = *bp;
  const unsigned t = engine::current_thread;
  if (b.at_barrier.size() + 1 == b.n) {
    for (unsigned u : b.at_barrier) {
      b.threads[u].state = engine::State::Ready;
      b.ready.push_back(u);
    }
    b.at_barrier.clear();
    return;
  }
  b.threads[t].state = engine::State::AtBlockBarrier;
  b.at_barrier.push_back(t);
  engine::park(b, t);
}

}  // namespace sim
