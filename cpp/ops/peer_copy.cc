// Copies between virtual CPU devices, ordered by events like a copy between two GPUs: the copy
// runs on the source's stream after the work that produces the source (and before any later work
// there that could overwrite it); the destination's stream waits for it before running anything
// queued after. Neither the host nor the other streams wait.
#include "../event.h"
#include "../kernels.h"
#include "ops.h"

namespace flock::ops {

Tensor copy_between_cpu_devices(const Tensor& x, Device to) {
  Tensor out = empty(x.shape, x.dtype, to, "to");
  auto copied = std::make_shared<Event>();
  auto copy = cast_table().get(x.device());
  // Set when the copy's closure goes: after the copy, or when a failed source stream dropped it
  // (then with out's failure mark, and the destination stream fails too).
  std::shared_ptr<EventSetter> done(new EventSetter{copied, out.storage});
  enqueue("to", x.device(), [x, out, done, copy]() mutable { copy(x, out); });
  wait_event(to, copied, "to");
  return out;
}

}  // namespace flock::ops
