/**
 * Ops that move elements without arithmetic: flip, roll, repeat, tile, unbind (tril and triu are
 * generated with their kernel: lib/ops/generated/kernel_ops.ts); flip's and roll's gradients are in
 * lib/ops/grads/rearrange.ts, the rest are compositions.
 */
import { native } from '../native';
import type { Tensor } from '../tensor';
import { record } from '../dispatch/record';
import { gradOf } from './grads/table';
import { describe } from '../errors';
import { checkTensor, normDim, rangeError, shapeStr, typeError, wrap } from './util';
import { reshape, expand, narrow, squeeze } from './shape';

function checkInt(op: string, name: string, v: unknown): number {
  if (typeof v !== 'number' || !Number.isInteger(v)) throw typeError(op, `${name} must be an integer, got ${describe(v)}`);
  return v;
}

function intList(op: string, name: string, v: unknown): number[] {
  const list = typeof v === 'number' ? [v] : v;
  if (!Array.isArray(list)) throw typeError(op, `${name} must be an integer or an array of integers, got ${describe(v)}`);
  list.forEach((d, i) => checkInt(op, `${name}[${i}]`, d));
  return list as number[];
}

/** A copy with the order of elements reversed along `dims` (negative dims count from the end). */
export function flip(x: Tensor, dims: number | number[]): Tensor {
  checkTensor('flip', 'input', x);
  const list = intList('flip', 'dims', dims).map((d) => normDim('flip', d, x.ndim));
  if (new Set(list).size !== list.length) throw typeError('flip', `dims ${JSON.stringify(dims)} name a dim more than once`);
  const out = wrap(native.flip(x.handle, list));
  return record(out, 'flip', [x], (g) => gradOf('flip').grad(g, { dims: list }), { savesOutput: false });
}

/**
 * Rolls elements along `dims` by `shifts` (elements leaving one end come back at the other). With no
 * dims the tensor is rolled as if flattened, then restored to its shape, as torch.roll.
 */
export function roll(x: Tensor, shifts: number | number[], dims?: number | number[]): Tensor {
  checkTensor('roll', 'input', x);
  const s = intList('roll', 'shifts', shifts);
  if (dims === undefined || (Array.isArray(dims) && dims.length === 0)) {
    if (s.length !== 1) throw typeError('roll', `without dims, shifts must be a single integer, got ${JSON.stringify(shifts)}`);
    return reshape(roll(reshape(x, [x.numel()]), s, 0), [...x.shape]);
  }
  const d = intList('roll', 'dims', dims).map((v) => normDim('roll', v, x.ndim));
  if (d.length !== s.length)
    throw typeError('roll', `shifts ${JSON.stringify(shifts)} and dims ${JSON.stringify(dims)} must have the same length`);
  const out = wrap(native.roll(x.handle, s, d));
  return record(out, 'roll', [x], (g) => gradOf('roll').grad(g, { shifts: s, dims: d }), { savesOutput: false });
}

/**
 * The tensor repeated `repeats[i]` times along dim i (torch.Tensor.repeat): `repeats` has at least
 * as many entries as dims, and extra leading entries add dims. One strided copy (an expand of the
 * tensor viewed as [1, s0, 1, s1, ...]); the gradient sums the copies.
 */
export function repeat(x: Tensor, repeats: number[]): Tensor {
  checkTensor('repeat', 'input', x);
  const r = intList('repeat', 'repeats', repeats);
  if (r.length < x.ndim)
    throw rangeError(
      'repeat',
      `the number of repeats (${r.length}) cannot be smaller than the number of dims of the tensor (${x.ndim}, shape ${shapeStr(x.shape)})`,
    );
  if (r.some((v) => v < 0)) throw rangeError('repeat', `repeats must be non-negative, got ${JSON.stringify(r)}`);
  const shape = [...Array<number>(r.length - x.ndim).fill(1), ...x.shape];
  const interleaved = shape.flatMap((s) => [1, s]);
  const expanded = shape.flatMap((s, i) => [r[i], s]);
  const out = shape.map((s, i) => s * r[i]);
  return reshape(expand(reshape(x, interleaved), expanded), out);
}

/** numpy/torch tile: like repeat, but `reps` shorter than the dims is padded with leading 1s. */
export function tile(x: Tensor, reps: number[]): Tensor {
  checkTensor('tile', 'input', x);
  const r = intList('tile', 'reps', reps);
  return repeat(x, [...Array<number>(Math.max(0, x.ndim - r.length)).fill(1), ...r]);
}

/** The slices along `dim` as a list of tensors with that dim removed. */
export function unbind(x: Tensor, dim = 0): Tensor[] {
  checkTensor('unbind', 'input', x);
  if (x.ndim === 0) throw rangeError('unbind', 'cannot unbind a 0-d tensor', 'ERR_INDEX');
  const d = normDim('unbind', dim, x.ndim);
  return Array.from({ length: x.shape[d] }, (_, i) => squeeze(narrow(x, d, i, 1), d));
}
