// The fused recurrent cell of nn.RNN, nn.LSTM, nn.GRU and their single-step cells: one kernel per
// time step computes every gate's nonlinearity and the new hidden (and cell) state from the two
// projections a GEMM made, and one kernel per step computes the gates' gradients. Gate order and
// formulas are PyTorch's: LSTM i, f, g, o; GRU r, z, n with n = tanh(x_n + r · (W_hn h + b_hn)).
#pragma once
#include "dispatch.h"
#include "tensor.h"

namespace flock {

enum class RnnMode : int { rnn_tanh, rnn_relu, lstm, gru, count };

// Gates per hidden unit: the rows of W_ih and W_hh are gates · hidden.
constexpr int64_t rnn_gates(RnnMode m) { return m == RnnMode::lstm ? 4 : m == RnnMode::gru ? 3 : 1; }
// Columns per hidden unit of the per-step values kept for backward: LSTM its four activated gates,
// GRU r, z, n and W_hn h + b_hn; a plain RNN keeps none (its derivative comes from h).
constexpr int64_t rnn_saved(RnnMode m) { return m == RnnMode::lstm || m == RnnMode::gru ? 4 : 0; }

// One step over `rows` batch rows of `hidden` units. Every tensor is a contiguous 2-D view:
// gx, gh [rows, G] (G = gates · hidden) the input projection x·W_ihᵀ + b_ih and the hidden one
// h_prev·W_hhᵀ; b_hh [G] or null; h_prev, h [rows, hidden]; c_prev, c the cell state (LSTM only,
// else null); saved [rows, rnn_saved · hidden] or null (nothing is kept for backward).
FLOCK_DECLARE_KERNEL(rnn_cell_forward, void(RnnMode mode, const Tensor& gx, const Tensor& gh, const Tensor* b_hh,
                                            const Tensor& h_prev, const Tensor* c_prev, Tensor& h, Tensor* c, Tensor* saved))
// The gradient of one step. dh = gy_h + gh_next (each optional) is the gradient of h; gy_c (LSTM,
// optional) adds to the cell's. `carry` [rows, hidden] is read and then overwritten in place: LSTM
// the cell gradient (in: of c, out: of c_prev), GRU the part of h_prev's gradient that skips the
// GEMM (in: added to dh, out: dh · z); null for a plain RNN. dgx [rows, G] receives the gradient of
// the pre-activations from x's side; dgh (GRU only, else null: the same as dgx) from h's side,
// whose n part is scaled by r.
FLOCK_DECLARE_KERNEL(rnn_cell_backward, void(RnnMode mode, const Tensor* gy_h, const Tensor* gy_c, const Tensor* gh_next,
                                             Tensor* carry, const Tensor& h, const Tensor* c, const Tensor* c_prev,
                                             const Tensor& h_prev, const Tensor* saved, Tensor& dgx, Tensor* dgh))

}  // namespace flock
