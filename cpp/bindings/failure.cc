// Fail-stop exports (stream_failure.h): step tickets, by which an optimizer learns whether its
// update ran or was dropped by a failed stream; a tensor's failure without throwing it; and the
// allocation-failure hook the fail-stop tests use.
#include <atomic>
#include "addon.h"
#include "convert.h"

namespace flock::js {
namespace {

const napi_type_tag kTicketTag = {0x5e1a7c3b9d2f4068ULL, 0x2b8c4e6a1f3d5079ULL};

// 0 while queued, 1 once run, 2 once dropped (destroyed without running).
struct Ticket {
  std::atomic<int> state{0};
};

// Held by the ticket's task only: its destruction, run or not, settles the ticket.
struct TicketGuard {
  std::shared_ptr<Ticket> ticket;
  bool ran = false;
  ~TicketGuard() { ticket->state.store(ran ? 1 : 2, std::memory_order_release); }
};

// streamTicket(device): a ticket queued on `device`'s stream behind everything queued so far.
Napi::Value StreamTicket(const Napi::CallbackInfo& info) {
  Args a{info, "streamTicket"};
  const Device d = a.device(0);
  auto ticket = std::make_shared<Ticket>();
  auto guard = std::make_shared<TicketGuard>();
  guard->ticket = ticket;
  // A no-op: run at once on this thread when the stream is idle (waking its worker would cost
  // more than the step it follows), else queued; dropped either way on a failed stream.
  Addon::of(info.Env()).context.stream(d).enqueue_small("streamTicket", [guard] { guard->ran = true; });
  auto* h = new std::shared_ptr<Ticket>(std::move(ticket));
  auto ext = Napi::External<std::shared_ptr<Ticket>>::New(info.Env(), h, [](Napi::Env, std::shared_ptr<Ticket>* t) { delete t; });
  ext.TypeTag(&kTicketTag);
  return ext;
}

// ticketState(ticket): 'queued', 'ran' or 'dropped'.
Napi::Value TicketState(const Napi::CallbackInfo& info) {
  Args a{info, "ticketState"};
  Napi::Value v = a.at(0);
  if (!v.IsExternal() || !v.As<Napi::Object>().CheckTypeTag(&kTicketTag))
    fail(Code::Arg, "ticketState: expected a ticket from streamTicket, got ", describe(v));
  const int s = (*v.As<Napi::External<std::shared_ptr<Ticket>>>().Data())->state.load(std::memory_order_acquire);
  return Napi::String::New(info.Env(), s == 0 ? "queued" : s == 1 ? "ran" : "dropped");
}

// tensorFailure(t): {code, message, known} when t's producing task failed or was dropped, else
// null; `known` once the JS thread has been told of that failure.
Napi::Value TensorFailure(const Napi::CallbackInfo& info) {
  Args a{info, "tensorFailure"};
  const Tensor t = a.tensor_even_failed(0, "tensor");
  const StreamError* f = t.storage->failure();
  if (!f) return info.Env().Null();
  Napi::Object o = Napi::Object::New(info.Env());
  o.Set("code", code_name(f->code));
  o.Set("message", f->message);
  o.Set("known", f->acknowledged());  // the JS thread has been told: ops reading it throw
  return o;
}

// acknowledgeFailures(): every stream's failures so far are known to the JS thread. A strategy
// calls it when it reports a failed step, once the step's collectives have all settled: the
// failures they caused here (an ordered collective's gate) are part of what it reports.
Napi::Value AcknowledgeFailures(const Napi::CallbackInfo& info) {
  for (Stream* s : Addon::of(info.Env()).context.streams()) s->acknowledge_failures();
  return info.Env().Undefined();
}

// failAllocAfter(n): the (n+1)-th storage allocation from now fails with ERR_OOM; -1 turns it off.
Napi::Value FailAllocAfter(const Napi::CallbackInfo& info) {
  Args a{info, "failAllocAfter"};
  fail_alloc_after(a.integer(0, "n", -1, int64_t(1) << 40));
  return info.Env().Undefined();
}

}  // namespace

}  // namespace flock::js

#include "../generated/register_failure.inc"
