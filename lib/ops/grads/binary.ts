/**
 * Gradient formulas of the binary ops whose functions are generated from the op manifest
 * (lib/ops/generated/binary.ts calls `binaryFormulas.<name>`): one entry per op, as PyTorch's
 * derivatives.yaml. A formula receives the upstream gradient, the promoted operands and the output
 * and returns each operand's gradient at the broadcast shape (the launcher sums it back to the
 * operand's shape); it returns null for an operand that does not require grad. It is built from
 * differentiable ops, so the gradient is itself differentiable. Unary ops need no entry: their
 * derivative is a case of `unary_derivative` in cpp/scalar_math.h.
 */
import type { BinaryFormula } from '../call_shapes';
import { div, mul } from '../elementwise';

/** The table; the generated wrappers index it by the op's name, so a missing entry fails the type-check. */
export const binaryFormulas = {
  // As torch: grad * input / result and grad * other / result (NaN where both operands are 0).
  hypot: {
    savesOutput: true,
    grad: (g, a, b, out) => [a.requiresGrad ? div(mul(g, a), out) : null, b.requiresGrad ? div(mul(g, b), out) : null],
  },
} satisfies Record<string, BinaryFormula>;
