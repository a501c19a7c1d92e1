// The arithmetic of the simulated NCCL's collectives: element sizes and the element-wise
// reduction of every rank's contribution, in each of NCCL's data types and reduction ops.
#pragma once
#include <cstddef>
#include "nccl_types.h"

namespace sim::nccl {

// Bytes per element; 0 for a value outside ncclDataType_t.
size_t dtype_size(int dtype);

// out[i] = op over r of in[r][i], for i < n; `out` may be one of the inputs. Ranks are combined
// in rank order. f16/bf16 accumulate in float and round once at the end (round-to-nearest-even);
// NCCL's ring rounds after every hop instead, so with more than two ranks a real GPU's low bits
// can differ by a few ulps. f32 accumulates in f32 and f64 in f64, as NCCL does. Avg is the sum
// divided by the rank count (NCCL scales each input by 1/n first for floats: last-bit
// differences) and, for integers, the truncated quotient (NCCL's SumPostDiv). Integer sums and
// products wrap. Min/max on floats use fmin/fmax, as NCCL's kernels do: a NaN loses to a number.
void reduce(int dtype, int op, const void* const* in, int ranks, size_t n, void* out);

}  // namespace sim::nccl
