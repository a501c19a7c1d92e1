/**
 * The gradients of the hand-written element-wise ops: add, sub, mul, div, pow (tensor exponent),
 * maximum, minimum, clamp (tensor bounds), lerp, where, to and clone. The unary kernel's derivative
 * serves the rest (pow with a number exponent, clamp with number bounds among them). An operand
 * that does not require grad gets none computed (a constant's, such as a mask or a mean's count).
 * The binary ones give each operand's gradient at the broadcast shape: recordBinary
 * (lib/ops/call_shapes.ts) sums it back to the operand's shape.
 */
import type { Tensor } from '../../tensor';
import { native } from '../../native';
import { castTo, scalar, sumTo, wrap } from '../util';
import { add, cast, div, eq, ge, gt, le, log, logicalAnd, logicalOr, lt, move, mul, neg, pow, sub, where } from '../elementwise';
import { defineGrads } from './table';

/** A binary op's operands (promoted to one dtype) and its output. */
type Binary = { input: Tensor; other: Tensor; out: Tensor };

declare module './table' {
  interface GradContexts {
    add: Binary;
    sub: Binary;
    mul: Binary;
    div: Binary;
    pow: Binary;
    maximum: Binary;
    minimum: Binary;
    // The bounds given as tensors (null where left out), in the input's dtype.
    clamp: { input: Tensor; min: Tensor | null; max: Tensor | null };
    lerp: { start: Tensor; end: Tensor; weight: Tensor };
    where: { condition: Tensor; input: Tensor; other: Tensor };
    // `to` changes the dtype (recorded as 'cast') or the device, one per node; backward changes it back.
    to: { input: Tensor; changed: 'dtype' | 'device' };
    clone: Record<string, never>;
  }
}

/** maximum's and minimum's: ties split the gradient evenly, as torch's do. */
function tieSplit(g: Tensor, a: Tensor, b: Tensor, win: Tensor): (Tensor | null)[] {
  const tie = castTo(eq(a, b), g.dtype);
  const half = mul(tie, 0.5);
  return [
    a.requiresGrad ? mul(g, add(castTo(win, g.dtype), half)) : null,
    b.requiresGrad ? mul(g, sub(sub(scalar(1, g.dtype, g.device), castTo(win, g.dtype)), half)) : null,
  ];
}

const oneMinus = (t: Tensor) => sub(scalar(1, t.dtype, t.device), t);

defineGrads({
  add: { grad: (g) => [g, g] },
  sub: { grad: (g, { other }) => [g, other.requiresGrad ? neg(g) : null] },
  mul: { grad: (g, { input: a, other: b }) => [a.requiresGrad ? mul(g, b) : null, b.requiresGrad ? mul(g, a) : null] },
  div: {
    grad: (g, { input: a, other: b }) => [a.requiresGrad ? div(g, b) : null, b.requiresGrad ? neg(div(mul(g, a), mul(b, b))) : null],
  },
  // As torch: d/da is 0 where b == 0 (not 0 * a^-1, NaN at a = 0), and d/db is 0 where a == 0 and
  // b >= 0 (not a^b * log 0, which is NaN or -inf there).
  pow: {
    savesOutput: true,
    grad: (g, { input: a, other: b, out }) => [
      a.requiresGrad ? where(eq(b, 0), 0, mul(g, mul(b, pow(a, sub(b, 1))))) : null,
      b.requiresGrad ? mul(g, where(logicalAnd(eq(a, 0), ge(b, 0)), 0, mul(out, log(a)))) : null,
    ],
  },
  maximum: { grad: (g, { input, other }) => tieSplit(g, input, other, gt(input, other)) },
  minimum: { grad: (g, { input, other }) => tieSplit(g, input, other, lt(input, other)) },
  // As PyTorch: the input's gradient where it lies within its bounds, each bound's where it binds
  // (max wins where min > max).
  clamp: {
    grad: (g, { input: a, min: lo, max: hi }) => {
      const zero = scalar(0, g.dtype, g.device);
      const pick = (mask: Tensor, shape: readonly number[]) => sumTo(wrap(native.where(mask.handle, g.handle, zero.handle)), shape);
      let inside: Tensor | null = null;
      if (lo) inside = ge(a, lo);
      if (hi) inside = inside ? logicalAnd(inside, le(a, hi)) : le(a, hi);
      const grads: (Tensor | null)[] = [a.requiresGrad ? pick(inside!, a.shape) : null];
      if (lo) grads.push(lo.requiresGrad ? pick(hi ? logicalAnd(lt(a, lo), lt(lo, hi)) : lt(a, lo), lo.shape) : null);
      if (hi) grads.push(hi.requiresGrad ? pick(lo ? logicalOr(gt(a, hi), lt(hi, lo)) : gt(a, hi), hi.shape) : null);
      return grads;
    },
  },
  lerp: {
    grad: (g, { start, end, weight: w }) => [
      start.requiresGrad ? sumTo(mul(g, oneMinus(w)), start.shape) : null,
      end.requiresGrad ? sumTo(mul(g, w), end.shape) : null,
      w.requiresGrad ? sumTo(mul(g, sub(end, start)), w.shape) : null,
    ],
  },
  where: {
    grad: (g, { condition: c, input: ta, other: tb }) => {
      const zero = scalar(0, g.dtype, g.device);
      return [
        ta.requiresGrad ? sumTo(wrap(native.where(c.handle, g.handle, zero.handle)), ta.shape) : null,
        tb.requiresGrad ? sumTo(wrap(native.where(c.handle, zero.handle, g.handle)), tb.shape) : null,
      ];
    },
  },
  to: { grad: (g, { input, changed }) => [changed === 'dtype' ? cast(g, input.dtype) : move(g, input.device)] },
  clone: { grad: (g) => [g] },
});
