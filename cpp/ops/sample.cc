// multinomial front end: with replacement one kernel; without, Philox keys and a stable sort
// (the top num_samples keys of a row are the draw), so both devices draw the same indices.
#include "ops.h"

namespace flock::ops {

Tensor multinomial(const Tensor& probs, int64_t num_samples, bool replacement, uint64_t seed, uint64_t offset) {
  if (!is_floating(probs.dtype))
    fail(Code::DType, "multinomial: probabilities must be floating point, got ", dtype_name(probs.dtype));
  if (probs.dim() != 2)
    fail(Code::Shape, "multinomial: expected probabilities of shape [rows, categories], got ", shape_str(probs.shape));
  const int64_t rows = probs.shape[0], c = probs.shape[1];
  if (c == 0) fail(Code::Shape, "multinomial: no categories to draw from in ", shape_str(probs.shape));
  if (num_samples <= 0) fail(Code::Range, "multinomial: numSamples must be positive, got ", num_samples);
  if (!replacement && num_samples > c)
    fail(Code::Range, "multinomial: cannot draw ", num_samples, " samples without replacement from ", c, " categories");
  // The weights are checked on the stream before the draw where the device has the check (the
  // front end in lib/ops/sample.ts reads them back elsewhere), so sampling never waits for the queue.
  if (rows > 0) {
    if (auto check = multinomial_check_table().fns[static_cast<int>(probs.device().type)])
      enqueue("multinomial", probs.device(), [=]() { check(probs, num_samples, replacement); });
  }
  if (replacement) {
    Tensor out = empty({rows, num_samples}, DType::i64, probs.device(), "multinomial");
    if (rows == 0) return out;
    auto kernel = multinomial_table().get(probs.device());
    enqueue("multinomial", probs.device(), [=]() mutable { kernel(probs, out, num_samples, seed, offset); });
    return out;
  }
  Tensor keys = empty(probs.shape, DType::f64, probs.device(), "multinomial");
  if (rows == 0) return empty({rows, num_samples}, DType::i64, probs.device(), "multinomial");
  auto kernel = multinomial_keys_table().get(probs.device());
  enqueue("multinomial", probs.device(), [=]() mutable { kernel(probs, keys, seed, offset); });
  return narrow(sort(keys, 1, true, "multinomial").second, 1, 0, num_samples);
}

}  // namespace flock::ops
