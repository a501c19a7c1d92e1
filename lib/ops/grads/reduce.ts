/**
 * The gradients of the reductions (sum, mean, max, min, prod, var, std, logsumexp) and of softmax
 * and logSoftmax: the output's gradient expanded back over the reduced dims, times the local
 * derivative.
 */
import type { Tensor } from '../../tensor';
import { native } from '../../native';
import { castTo, wrap } from '../util';
import { div, eq, exp, mul, sub, where } from '../elementwise';
import { countOf, mean, sum } from '../reduce';
import { defineGrads } from './table';

/** A reduction's input, the dims it reduced and whether it kept them. */
type Reduced = { input: Tensor; dims: number[]; keepdim: boolean };

declare module './table' {
  interface GradContexts {
    sum: Reduced;
    mean: Reduced;
    // Over dims (ties share the gradient), or along one dim with the index it picked.
    max: Extreme;
    min: Extreme;
    prod: Reduced;
    var: Reduced & { correction: number };
    std: Reduced & { out: Tensor; correction: number };
    logsumexp: Reduced & { out: Tensor };
    softmax: { out: Tensor; dim: number };
    logSoftmax: { out: Tensor; dim: number };
  }
}

type Extreme = (Reduced & { out: Tensor }) | { input: Tensor; dim: number; keepdim: boolean; indices: Tensor };

/** `g` (reduced over `dims`) reshaped with those dims kept as 1, then expanded to `shape`. */
function expandBack(g: Tensor, shape: readonly number[], dims: number[], keepdim: boolean): Tensor {
  let r = g;
  if (!keepdim) {
    const kept = shape.map((s, i) => (dims.includes(i) ? 1 : s));
    r = wrap(native.reshape(g.handle, kept));
  }
  return wrap(native.expand(r.handle, [...shape]));
}

function keptShape(x: Tensor, out: Tensor, dims: number[], keepdim: boolean): Tensor {
  return keepdim
    ? out
    : wrap(
        native.reshape(
          out.handle,
          x.shape.map((s, i) => (dims.includes(i) ? 1 : s)),
        ),
      );
}

function extremeGrad(g: Tensor, ctx: Extreme): Tensor[] {
  if ('indices' in ctx) {
    // Along one dim: all of g to the index that was picked.
    const { input: x, dim: d, keepdim, indices } = ctx;
    if (x.ndim === 0) return [g];
    const kept = keepdim
      ? g
      : wrap(
          native.reshape(
            g.handle,
            x.shape.map((s, i) => (i === d ? 1 : s)),
          ),
        );
    const idx = keepdim ? indices : wrap(native.reshape(indices.handle, kept.shape as number[]));
    const zeros = wrap(native.full([...x.shape], g.dtype, g.device, 0));
    return [wrap(native.scatterAdd(zeros.handle, d, idx.handle, kept.handle))];
  }
  // The gradient goes to every position that attains the extreme, shared evenly (as amax).
  const { input: x, out, dims, keepdim } = ctx;
  const hit = castTo(eq(x, expandBack(keptShape(x, out, dims, keepdim), x.shape, dims, true)), g.dtype);
  const count = expandBack(sum(hit, dims, true), x.shape, dims, true);
  return [div(mul(expandBack(g, x.shape, dims, keepdim), hit), count)];
}

function prodNoGrad(x: Tensor, dims: number[]): Tensor {
  return wrap(native.reduce('prod', x.handle, dims, true));
}

/** The gradient of var(input) over `dims` given `g`, the gradient of its output. */
function varianceGrad(input: Tensor, dims: number[], keepdim: boolean, correction: number, g: Tensor): Tensor {
  const n = countOf(input, dims);
  const centered = sub(input, mean(input, dims, true));
  return mul(expandBack(g, input.shape, dims, keepdim), mul(centered, 2 / Math.max(n - correction, 0)));
}

defineGrads({
  sum: { grad: (g, { input, dims, keepdim }) => [expandBack(g, input.shape, dims, keepdim)] },
  mean: { grad: (g, { input, dims, keepdim }) => [div(expandBack(g, input.shape, dims, keepdim), countOf(input, dims))] },
  max: { savesOutput: true, grad: extremeGrad },
  min: { savesOutput: true, grad: extremeGrad },
  // Exact with zeros: the product of the other elements where one zero is, 0 elsewhere.
  prod: {
    grad: (g, { input, dims, keepdim }) => {
      const zero = eq(input, 0);
      const zeros = expandBack(sum(zero, dims, true), input.shape, dims, true); // zeros in each reduced group
      const others = expandBack(prodNoGrad(where(zero, 1, input), dims), input.shape, dims, true); // product of the non-zeros
      const gx = expandBack(g, input.shape, dims, keepdim);
      // No zero: out / x. One zero: the others' product at the zero, 0 elsewhere. More: 0.
      const atZero = where(eq(zeros, 1), others, 0);
      const local = where(zero, atZero, where(eq(zeros, 0), div(others, where(zero, 1, input)), 0));
      return [mul(gx, local)];
    },
  },
  var: { grad: (g, { input, dims, keepdim, correction }) => [varianceGrad(input, dims, keepdim, correction, g)] },
  // As torch: g / (2 std) is taken as 0 where std == 0, so a constant row gets gradient 0 rather
  // than 0 * inf = NaN through sqrt.
  std: {
    savesOutput: true,
    grad: (g, { input, out, dims, keepdim, correction }) => [
      varianceGrad(input, dims, keepdim, correction, div(g, mul(out, 2)).maskedFill(eq(out, 0), 0)),
    ],
  },
  logsumexp: {
    savesOutput: true,
    grad: (g, { input, out, dims, keepdim }) => [
      mul(
        expandBack(g, input.shape, dims, keepdim),
        exp(sub(input, expandBack(keptShape(input, out, dims, keepdim), input.shape, dims, true))),
      ),
    ],
  },
  softmax: { savesOutput: true, grad: (g, { out: y, dim }) => [mul(y, sub(g, sum(mul(g, y), dim, true)))] },
  logSoftmax: { savesOutput: true, grad: (g, { out: y, dim }) => [sub(g, mul(exp(y), sum(g, dim, true)))] },
});
