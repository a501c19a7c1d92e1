/** Reductions over any dims (with keepdim), softmax and log-softmax, and their gradients. */
import { native } from '../native';
import type { ReduceOpName } from '../../types/native';
import type { Tensor } from '../tensor';
import { record } from '../autograd/node';
import { isFloating } from '../dtype';
import { castTo, checkTensor, dimList, normDim, typeError, wrap } from './util';
import { div, eq, exp, mul, sqrt, sub } from './elementwise';
import { autocastArgs } from '../amp/autocast';

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

function reduce(
  op: ReduceOpName,
  x: Tensor,
  dim: number | number[] | undefined,
  keepdim: boolean,
  correction = 0,
): { out: Tensor; dims: number[] } {
  checkTensor(op, 'input', x);
  if (typeof keepdim !== 'boolean') throw typeError(op, `keepdim must be a boolean, got ${typeof keepdim}`);
  const dims = dimList(op, dim, x.ndim);
  return { out: wrap(native.reduce(op, x.handle, dims, keepdim, correction)), dims };
}

function countOf(x: Tensor, dims: number[]): number {
  return dims.reduce((n, d) => n * (x.shape[d] ?? 1), 1);
}

export function sum(x: Tensor, dim?: number | number[], keepdim = false): Tensor {
  [x] = autocastArgs('sum', x);
  const input = x.dtype === 'bool' ? castTo(x, 'i64') : x;
  const { out, dims } = reduce('sum', input, dim, keepdim);
  return record(out, 'sum', [input], (g) => [expandBack(g, input.shape, dims, keepdim)]);
}

export function mean(x: Tensor, dim?: number | number[], keepdim = false): Tensor {
  [x] = autocastArgs('mean', x);
  const input = isFloating(x.dtype) ? x : castTo(x, 'f32');
  const { out, dims } = reduce('mean', input, dim, keepdim);
  return record(out, 'mean', [input], (g) => [div(expandBack(g, input.shape, dims, keepdim), countOf(input, dims))]);
}

function extreme(op: 'max' | 'min', x: Tensor, dim: number | number[] | undefined, keepdim: boolean): Tensor {
  const { out, dims } = reduce(op, x, dim, keepdim);
  return record(out, op, [x], (g) => {
    // The gradient goes to every position that attains the extreme, shared evenly (as amax).
    const hit = castTo(eq(x, expandBack(keptShape(x, out, dims, keepdim), x.shape, dims, true)), g.dtype);
    const count = expandBack(sum(hit, dims, true), x.shape, dims, true);
    return [div(mul(expandBack(g, x.shape, dims, keepdim), hit), count)];
  });
}
export const max = (x: Tensor, dim?: number | number[], keepdim = false): Tensor => extreme('max', x, dim, keepdim);
export const min = (x: Tensor, dim?: number | number[], keepdim = false): Tensor => extreme('min', x, dim, keepdim);

function argExtreme(op: 'argmax' | 'argmin', x: Tensor, dim: number | undefined, keepdim: boolean): Tensor {
  checkTensor(op, 'input', x);
  if (dim === undefined) {
    const flat = wrap(native.reshape(x.handle, [x.numel()]));
    return wrap(native.reduce(op, flat.handle, [0], false));
  }
  return wrap(native.reduce(op, x.handle, [normDim(op, dim, x.ndim)], keepdim));
}
export const argmax = (x: Tensor, dim?: number, keepdim = false): Tensor => argExtreme('argmax', x, dim, keepdim);
export const argmin = (x: Tensor, dim?: number, keepdim = false): Tensor => argExtreme('argmin', x, dim, keepdim);

export interface VarOptions {
  correction?: number;
  keepdim?: boolean;
}

/** The gradient of var(input) over `dims` given `g`, the gradient of its output. */
function varianceGrad(input: Tensor, dims: number[], keepdim: boolean, correction: number, g: Tensor): Tensor {
  const n = countOf(input, dims);
  const centered = sub(input, mean(input, dims, true));
  return mul(expandBack(g, input.shape, dims, keepdim), mul(centered, 2 / Math.max(n - correction, 0)));
}

export function variance(x: Tensor, dim?: number | number[], options: VarOptions = {}): Tensor {
  const correction = options.correction ?? 1;
  const keepdim = options.keepdim ?? false;
  const input = isFloating(x.dtype) ? x : castTo(x, 'f32');
  const { out, dims } = reduce('var', input, dim, keepdim, correction);
  return record(out, 'var', [input], (g) => [varianceGrad(input, dims, keepdim, correction, g)]);
}

export function std(x: Tensor, dim?: number | number[], options: VarOptions = {}): Tensor {
  const correction = options.correction ?? 1;
  const keepdim = options.keepdim ?? false;
  const input = isFloating(x.dtype) ? x : castTo(x, 'f32');
  const { out: v, dims } = reduce('var', input, dim, keepdim, correction);
  const out = sqrt(v); // v has no graph, so this records nothing
  v.dispose();
  // As torch: g / (2 std) is taken as 0 where std == 0, so a constant row gets gradient 0 rather
  // than 0 * inf = NaN through sqrt.
  return record(out, 'std', [input], (g) => [
    varianceGrad(input, dims, keepdim, correction, div(g, mul(out, 2)).maskedFill(eq(out, 0), 0)),
  ]);
}

export function logsumexp(x: Tensor, dim: number | number[], keepdim = false): Tensor {
  const input = isFloating(x.dtype) ? x : castTo(x, 'f32');
  const { out, dims } = reduce('logsumexp', input, dim, keepdim);
  return record(out, 'logsumexp', [input], (g) => [
    mul(
      expandBack(g, input.shape, dims, keepdim),
      exp(sub(input, expandBack(keptShape(input, out, dims, keepdim), input.shape, dims, true))),
    ),
  ]);
}

export function softmax(x: Tensor, dim = -1): Tensor {
  checkTensor('softmax', 'input', x);
  [x] = autocastArgs('softmax', x);
  const input = isFloating(x.dtype) ? x : castTo(x, 'f32');
  const d = normDim('softmax', dim, input.ndim);
  const y = wrap(native.softmax(input.handle, d, false));
  return record(y, 'softmax', [input], (g) => [mul(y, sub(g, sum(mul(g, y), d, true)))]);
}

export function logSoftmax(x: Tensor, dim = -1): Tensor {
  checkTensor('logSoftmax', 'input', x);
  [x] = autocastArgs('logSoftmax', x);
  const input = isFloating(x.dtype) ? x : castTo(x, 'f32');
  const d = normDim('logSoftmax', dim, input.ndim);
  const y = wrap(native.softmax(input.handle, d, true));
  return record(y, 'logSoftmax', [input], (g) => [sub(g, mul(exp(y), sum(g, d, true)))]);
}
