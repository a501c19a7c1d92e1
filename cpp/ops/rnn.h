// Front ends of the recurrent layers: a whole sequence of one layer and direction, each step one
// GEMM (h_prev·W_hhᵀ, the existing matmul) and one fused cell kernel (rnn_cell.h). The input
// projection of every step comes in precomputed (one GEMM over the sequence, made by the caller).
#pragma once
#include <optional>
#include <vector>
#include "../rnn_cell.h"

namespace flock::ops {

// gx [T, B, G] (x·W_ihᵀ + b_ih of every step), w_hh [G, H], b_hh [G] or null, h0 [B, H], c0
// [B, H] for LSTM only. Steps run from T−1 down to 0 when `reverse`. Returns {states, saved}:
// states [T+1, B, H] holds h0 and every step's h (LSTM: [2, T+1, B, H], the second plane c); step t
// is slot t+1 and h0 slot 0, or, reversed, step t slot t and h0 slot T. `saved` ([T, B, 4H], LSTM
// and GRU, only when `save`) is what backward reads; otherwise an empty tensor.
std::vector<Tensor> rnn_forward(RnnMode mode, const Tensor& gx, const Tensor& w_hh, const Tensor* b_hh, const Tensor& h0,
                                const Tensor* c0, bool reverse, bool save);

// The gradients of rnn_forward's inputs given gstates (states' shape; the h0 slots are ignored).
// dgx always; the others when asked for.
struct RnnGrads {
  Tensor dgx;
  std::optional<Tensor> dw_hh, db_hh, dh0, dc0;
};
RnnGrads rnn_backward(RnnMode mode, const Tensor& gstates, const Tensor& states, const Tensor* saved, const Tensor& w_hh,
                      bool reverse, bool want_w, bool want_b, bool want_h0, bool want_c0);

}  // namespace flock::ops
