// Recurrent layers, one layer and direction per call: the loop over time steps queues, per step,
// the hidden GEMM and one fused cell kernel, writing each step's state straight into its slot of
// one states tensor (so the next GEMM reads it in place and the caller's outputs are views).
// Backward runs the steps in the opposite order with the cell's backward kernel and one GEMM per
// step for the recurrent gradient; W_hh's and b_hh's gradients are one GEMM and one sum over all
// steps at the end.
#include "rnn.h"
#include "ops.h"
#include "../generated/binary_codes.h"
#include "../generated/reduce_codes.h"

namespace flock::ops {
namespace {

constexpr const char* kOp = "rnn";

// Block `block` of rows·cols elements of a contiguous tensor, as a [rows, cols] view.
Tensor block_view(const Tensor& base, int64_t block, int64_t rows, int64_t cols) {
  Tensor v = base;
  v.shape = Shape{rows, cols};
  v.offset = base.offset + block * rows * cols;
  return v;
}

void check_like(const Tensor& ref, const Tensor& t, const char* name, const Shape& shape) {
  check_same_device(ref, t, kOp);
  if (t.dtype != ref.dtype) fail(Code::DType, kOp, ": ", name, " is ", dtype_name(t.dtype), ", input is ", dtype_name(ref.dtype));
  if (t.shape != shape) fail(Code::Shape, kOp, ": ", name, " is ", shape_str(t.shape), ", expected ", shape_str(shape));
}

void check_mode(RnnMode mode) {
  if (mode < RnnMode::rnn_tanh || mode >= RnnMode::count) fail(Code::Arg, kOp, ": unknown mode");
}

int64_t cell_work(RnnMode mode, int64_t rows, int64_t hidden) { return rows * hidden * rnn_gates(mode) * kSlowElement; }

}  // namespace

std::vector<Tensor> rnn_forward(RnnMode mode, const Tensor& gx, const Tensor& w_hh, const Tensor* b_hh, const Tensor& h0,
                                const Tensor* c0, bool reverse, bool save) {
  check_mode(mode);
  if (!is_floating(gx.dtype)) fail(Code::DType, kOp, ": expected a floating dtype, got ", dtype_name(gx.dtype));
  if (gx.dim() != 3) fail(Code::Shape, kOp, ": the input projection must be 3-D [T, B, G], got ", shape_str(gx.shape));
  if (w_hh.dim() != 2) fail(Code::Shape, kOp, ": weight_hh must be 2-D [gates·hidden, hidden], got ", shape_str(w_hh.shape));
  const int64_t T = gx.shape[0], B = gx.shape[1], G = gx.shape[2], H = w_hh.shape[1];
  if (T < 1) fail(Code::Shape, kOp, ": the sequence is empty (input ", shape_str(gx.shape), ")");
  const bool lstm = mode == RnnMode::lstm;
  check_like(gx, w_hh, "weight_hh", Shape{rnn_gates(mode) * H, H});
  if (G != rnn_gates(mode) * H)
    fail(Code::Shape, kOp, ": input projection ", shape_str(gx.shape), " does not match weight_hh ", shape_str(w_hh.shape));
  if (b_hh) check_like(gx, *b_hh, "bias_hh", Shape{G});
  check_like(gx, h0, "h0", Shape{B, H});
  if (lstm != (c0 != nullptr)) fail(Code::Arg, kOp, lstm ? ": LSTM needs c0" : ": only LSTM takes c0");
  if (c0) check_like(gx, *c0, "c0", Shape{B, H});

  const Device dev = gx.device();
  Tensor states = empty(lstm ? Shape{2, T + 1, B, H} : Shape{T + 1, B, H}, gx.dtype, dev, kOp);
  const int64_t S = rnn_saved(mode);
  save = save && S > 0;
  Tensor saved = empty(save ? Shape{T, B, S * H} : Shape{0}, gx.dtype, dev, kOp);
  if (B * H == 0) return {states, saved};
  const int64_t cplane = T + 1;  // c's slot k is block cplane + k of states
  const int64_t init = reverse ? T : 0;
  Tensor h_init = block_view(states, init, B, H);
  copy_(h_init, h0);
  if (lstm) {
    Tensor c_init = block_view(states, cplane + init, B, H);
    copy_(c_init, *c0);
  }
  const Tensor b = b_hh ? *b_hh : Tensor{};
  const bool has_b = b_hh != nullptr;
  auto kernel = rnn_cell_forward_table().get(dev);
  for (int64_t s = 0; s < T; ++s) {
    const int64_t t = reverse ? T - 1 - s : s, prev = reverse ? t + 1 : t, cur = reverse ? t : t + 1;
    const Tensor hp = block_view(states, prev, B, H);
    const Tensor gh = matmul(hp, w_hh, false, true);
    const Tensor gxt = block_view(gx, t, B, G);
    const Tensor cp = lstm ? block_view(states, cplane + prev, B, H) : Tensor{};
    Tensor h = block_view(states, cur, B, H);
    Tensor c = lstm ? block_view(states, cplane + cur, B, H) : Tensor{};
    Tensor st = save ? block_view(saved, t, B, S * H) : Tensor{};
    enqueue(
        kOp, dev,
        [=]() mutable {
          kernel(mode, gxt, gh, has_b ? &b : nullptr, hp, lstm ? &cp : nullptr, h, lstm ? &c : nullptr, save ? &st : nullptr);
        },
        cell_work(mode, B, H));
  }
  return {states, saved};
}

RnnGrads rnn_backward(RnnMode mode, const Tensor& gstates, const Tensor& states, const Tensor* saved, const Tensor& w_hh,
                      bool reverse, bool want_w, bool want_b, bool want_h0, bool want_c0) {
  check_mode(mode);
  const bool lstm = mode == RnnMode::lstm, gru = mode == RnnMode::gru;
  if (states.dim() != (lstm ? 4 : 3) || (lstm && states.shape[0] != 2))
    fail(Code::Shape, kOp, ": states ", shape_str(states.shape), " are not those of rnnForward");
  const int64_t o = lstm ? 1 : 0;
  const int64_t T = states.shape[o] - 1, B = states.shape[o + 1], H = states.shape[o + 2], G = rnn_gates(mode) * H;
  if (T < 1) fail(Code::Shape, kOp, ": states ", shape_str(states.shape), " hold no step");
  check_like(states, gstates, "grad", states.shape);
  check_like(states, w_hh, "weight_hh", Shape{G, H});
  const int64_t S = rnn_saved(mode);
  if (S > 0 && !saved) fail(Code::Arg, kOp, ": backward needs the values rnnForward saved");
  if (saved) check_like(states, *saved, "saved", Shape{T, B, S * H});

  const Device dev = states.device();
  RnnGrads out;
  out.dgx = empty(Shape{T, B, G}, states.dtype, dev, kOp);
  Tensor dgh = gru ? empty(Shape{T, B, G}, states.dtype, dev, kOp) : out.dgx;
  const bool carries = lstm || gru;
  Tensor carry = carries ? full(Shape{B, H}, states.dtype, dev, 0) : Tensor{};
  Tensor ghn;  // the recurrent gradient of the step processed last: dgh_t · W_hh
  bool has_ghn = false;
  const int64_t cplane = T + 1;
  auto kernel = rnn_cell_backward_table().get(dev);
  const Tensor sv = saved ? *saved : Tensor{};
  for (int64_t s = T - 1; s >= 0; --s) {
    const int64_t t = reverse ? T - 1 - s : s, prev = reverse ? t + 1 : t, cur = reverse ? t : t + 1;
    const Tensor gyh = block_view(gstates, cur, B, H), h = block_view(states, cur, B, H), hp = block_view(states, prev, B, H);
    const Tensor gyc = lstm ? block_view(gstates, cplane + cur, B, H) : Tensor{};
    const Tensor c = lstm ? block_view(states, cplane + cur, B, H) : Tensor{};
    const Tensor cp = lstm ? block_view(states, cplane + prev, B, H) : Tensor{};
    const Tensor st = S > 0 ? block_view(sv, t, B, S * H) : Tensor{};
    Tensor dx = block_view(out.dgx, t, B, G), dh = block_view(dgh, t, B, G);
    const Tensor gn = ghn;
    const bool with_gn = has_ghn;
    if (B * H > 0)
      enqueue(
          kOp, dev,
          [=]() mutable {
            kernel(mode, &gyh, lstm ? &gyc : nullptr, with_gn ? &gn : nullptr, carries ? &carry : nullptr, h, lstm ? &c : nullptr,
                   lstm ? &cp : nullptr, hp, S > 0 ? &st : nullptr, dx, gru ? &dh : nullptr);
          },
          cell_work(mode, B, H));
    if (s > 0 || want_h0) {
      ghn = matmul(dh, w_hh, false, false);
      has_ghn = true;
    }
  }
  if (want_h0) out.dh0 = gru ? binary(BinaryOp::add, ghn, carry) : ghn;
  if (want_c0 && lstm) out.dc0 = carry;
  if (want_w) {
    // Step t's h_prev is slot t (forward) or t + 1 (reversed): T consecutive slots either way.
    Tensor hprev = block_view(states, 0, T * B, H);
    if (reverse) hprev.offset += B * H;
    out.dw_hh = matmul(block_view(dgh, 0, T * B, G), hprev, true, false);
  }
  if (want_b) out.db_hh = reduce(ReduceOp::sum, block_view(dgh, 0, T * B, G), Shape{0}, false);
  return out;
}

}  // namespace flock::ops
