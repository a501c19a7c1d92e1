/**
 * The gradient of norm, PyTorch's subgradient: 0 where the norm is 0 (p >= 1), shared evenly
 * between ties for p = ±inf.
 */
import type { Tensor } from '../../tensor';
import { native } from '../../native';
import { castTo, wrap } from '../util';
import { abs, div, eq, logicalOr, mul, pow, sign, where } from '../elementwise';
import { isnan } from '../predicates';
import { sum } from '../reduce';
import { defineGrads } from './table';

/** `ord` the order as a number ('fro' is 2), `dims` every dim reduced. */
type Normed = { input: Tensor; out: Tensor; ord: number; dims: number[]; keepdim: boolean };

declare module './table' {
  interface GradContexts {
    norm: Normed;
  }
}

function kept(t: Tensor, shape: readonly number[], dims: number[], keepdim: boolean): Tensor {
  return keepdim
    ? t
    : wrap(
        native.reshape(
          t.handle,
          shape.map((s, i) => (dims.includes(i) ? 1 : s)),
        ),
      );
}

function normGrad(g: Tensor, { input: x, out, ord: p, dims, keepdim }: Normed): Tensor {
  const gk = kept(g, x.shape, dims, keepdim);
  const nk = kept(out, x.shape, dims, keepdim);
  const zeroNorm = eq(nk, 0);
  if (p === 0) return mul(x, 0);
  if (p === 1) return mul(sign(x), gk);
  if (p === 2) return mul(x, where(zeroNorm, 0, div(gk, nk)));
  if (Math.abs(p) === Infinity) {
    const a = abs(x);
    const hit = castTo(logicalOr(eq(a, nk), isnan(a)), x.dtype);
    const count = sum(hit, dims, true);
    return mul(sign(x), mul(div(gk, count), hit));
  }
  const a = abs(x);
  if (p < 1) return mul(mul(sign(x), where(eq(x, 0), 0, pow(a, p - 1))), mul(gk, pow(nk, 1 - p)));
  const scale = where(zeroNorm, 0, div(gk, pow(nk, p - 1)));
  if (p < 2) return mul(mul(sign(x), pow(a, p - 1)), scale);
  return mul(mul(x, pow(a, p - 2)), scale);
}

defineGrads({
  norm: { savesOutput: true, grad: (g, ctx) => [normGrad(g, ctx)] },
});
