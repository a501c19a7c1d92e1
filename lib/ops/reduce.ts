/** Reductions over any dims (with keepdim), softmax and log-softmax; their gradients are in lib/ops/grads/reduce.ts. */
import { native } from '../native';
import type { ReduceOpName } from '../../types/native';
import { reduceOpNames } from '../../types/op_codes';
import type { Tensor } from '../tensor';
import { record, recording } from '../dispatch/record';
import { type DType, isFloating, toDType } from '../dtype';
import { checkOptions, describe } from '../errors';
import { checkBool, checkNumber } from '../validate';
import { castTo, checkTensor, dimList, normDim, typeError, wrap } from './util';
import { sqrt } from './elementwise';
import { autocastArgs } from '../dispatch/autocast';
import { indexOf } from './call_shapes';
import { gradOf } from './grads/table';

// Reduce op codes go to the addon as their index (see lib/ops/call_shapes.ts).
const REDUCE = indexOf(reduceOpNames);

function reduce(
  op: ReduceOpName,
  x: Tensor,
  dim: number | number[] | undefined,
  keepdim: boolean,
  correction = 0,
): { out: Tensor; dims: number[] } {
  checkTensor(op, 'input', x);
  checkBool(op, 'keepdim', keepdim);
  const dims = dimList(op, dim, x.ndim);
  return { out: wrap(native.reduce(REDUCE.get(op) ?? op, x.handle, dims, keepdim, correction)), dims };
}

/** How many elements each output element of a reduction over `dims` combines. */
export function countOf(x: Tensor, dims: number[]): number {
  return dims.reduce((n, d) => n * (x.shape[d] ?? 1), 1);
}

export function sum(x: Tensor, dim?: number | number[], keepdim = false): Tensor {
  checkTensor('sum', 'input', x);
  [x] = autocastArgs('sum', x);
  const input = x.dtype === 'bool' ? castTo(x, 'i64') : x;
  const { out, dims } = reduce('sum', input, dim, keepdim);
  if (!recording(input)) return out;
  return record(out, 'sum', [input], (g) => gradOf('sum').grad(g, { input, dims, keepdim }), { savesOutput: false });
}

export function mean(x: Tensor, dim?: number | number[], keepdim = false): Tensor {
  checkTensor('mean', 'input', x);
  [x] = autocastArgs('mean', x);
  const input = isFloating(x.dtype) ? x : castTo(x, 'f32');
  const { out, dims } = reduce('mean', input, dim, keepdim);
  if (!recording(input)) return out;
  return record(out, 'mean', [input], (g) => gradOf('mean').grad(g, { input, dims, keepdim }), { savesOutput: false });
}

function extreme(op: 'max' | 'min', x: Tensor, dim: number[] | undefined, keepdim: boolean): Tensor {
  checkTensor(op, 'input', x);
  const { out, dims } = reduce(op, x, dim, keepdim);
  // The names as literals: test/ops/grad_tables.test.ts finds the ops recorded through the table by them.
  return record(out, op, [x], (g) => (op === 'max' ? gradOf('max') : gradOf('min')).grad(g, { input: x, out, dims, keepdim }));
}

/** Values and their i64 indices along a dim, as torch.return_types (max, min, sort, topk). */
export interface ValuesIndices {
  values: Tensor;
  indices: Tensor;
}

/**
 * max/min along one dim, as torch.max(x, dim): the values and the index of the first extreme
 * (NaN counts as the extreme); the gradient goes to that index only.
 */
function extremeAlong(op: 'max' | 'min', x: Tensor, dim: number, keepdim: boolean): ValuesIndices {
  checkTensor(op, 'input', x);
  checkBool(op, 'keepdim', keepdim);
  const d = normDim(op, dim, x.ndim);
  const values = wrap(native.reduce(op, x.handle, [d], keepdim));
  const indices = wrap(native.reduce(op === 'max' ? 'argmax' : 'argmin', x.handle, [d], keepdim));
  record(values, op, [x], (g) => (op === 'max' ? gradOf('max') : gradOf('min')).grad(g, { input: x, dim: d, keepdim, indices }), {
    savesOutput: false,
    saves: [indices],
  });
  return { values, indices };
}

/**
 * The largest value: of every element (`max(x)`), over several dims (`max(x, [0, 2])`, ties share
 * the gradient as amax), or along one dim with its index (`max(x, 1)` → `{ values, indices }`).
 */
export function max(x: Tensor, dim: number, keepdim?: boolean): ValuesIndices;
export function max(x: Tensor, dim?: number[], keepdim?: boolean): Tensor;
export function max(x: Tensor, dim?: number | number[], keepdim = false): Tensor | ValuesIndices {
  return typeof dim === 'number' ? extremeAlong('max', x, dim, keepdim) : extreme('max', x, dim, keepdim);
}
/** The smallest value; see {@link max}. */
export function min(x: Tensor, dim: number, keepdim?: boolean): ValuesIndices;
export function min(x: Tensor, dim?: number[], keepdim?: boolean): Tensor;
export function min(x: Tensor, dim?: number | number[], keepdim = false): Tensor | ValuesIndices {
  return typeof dim === 'number' ? extremeAlong('min', x, dim, keepdim) : extreme('min', x, dim, keepdim);
}

/**
 * The product of every element, or along `dim` (as torch.prod; integers and bool give i64). The
 * gradient is exact with zeros: the product of the other elements where one zero is, 0 elsewhere.
 */
export function prod(x: Tensor, dim?: number, keepdim = false, options?: { dtype?: DType }): Tensor {
  checkTensor('prod', 'input', x);
  checkOptions('prod', options, ['dtype']);
  if (dim !== undefined && typeof dim !== 'number') throw typeError('prod', `dim must be an integer, got ${describe(dim)}`);
  let input = options?.dtype === undefined ? x : castTo(x, toDType('prod', options.dtype));
  if (!isFloating(input.dtype) && input.dtype !== 'i64') input = castTo(input, 'i64');
  const { out, dims } = reduce('prod', input, dim === undefined ? undefined : [dim], keepdim);
  if (!isFloating(input.dtype)) return out;
  return record(out, 'prod', [input], (g) => gradOf('prod').grad(g, { input, dims, keepdim }), { savesOutput: false });
}

function truthCount(op: 'all' | 'any', x: Tensor, dim: number | number[] | undefined, keepdim: boolean): Tensor {
  checkTensor(op, 'input', x);
  checkBool(op, 'keepdim', keepdim);
  const dims = dimList(op, dim, x.ndim);
  const zero = wrap(native.full([], x.dtype, x.device, 0));
  const truth = wrap(native.cast(wrap(native.binary('ne', x.handle, zero.handle)).handle, 'i64'));
  const count = wrap(native.reduce('sum', truth.handle, dims, keepdim));
  const size = countOf(x, dims);
  const bound = wrap(native.full([], 'i64', x.device, op === 'all' ? size : 0));
  const out = wrap(native.binary(op === 'all' ? 'eq' : 'gt', count.handle, bound.handle));
  return x.dtype === 'u8' ? wrap(native.cast(out.handle, 'u8')) : out; // torch keeps u8 for u8 inputs
}
/** Whether every element (over `dim`, default all) is non-zero: bool (u8 for u8 input), as torch.all. */
export const all = (x: Tensor, dim?: number | number[], keepdim = false): Tensor => truthCount('all', x, dim, keepdim);
/** Whether some element (over `dim`, default all) is non-zero: bool (u8 for u8 input), as torch.any. */
export const any = (x: Tensor, dim?: number | number[], keepdim = false): Tensor => truthCount('any', x, dim, keepdim);

function argExtreme(op: 'argmax' | 'argmin', x: Tensor, dim: number | undefined, keepdim: boolean): Tensor {
  checkTensor(op, 'input', x);
  checkBool(op, 'keepdim', keepdim);
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

/** The input and options of var and std, checked as `op`. */
function varArgs(op: 'var' | 'std', x: Tensor, options: VarOptions | undefined): { input: Tensor; correction: number; keepdim: boolean } {
  checkTensor(op, 'input', x);
  const o = checkOptions(op, options, ['correction', 'keepdim']);
  const correction = o.correction === undefined ? 1 : checkNumber(op, 'correction', o.correction);
  const keepdim = o.keepdim === undefined ? false : checkBool(op, 'keepdim', o.keepdim);
  return { input: isFloating(x.dtype) ? x : castTo(x, 'f32'), correction, keepdim };
}

export function variance(x: Tensor, dim?: number | number[], options?: VarOptions): Tensor {
  const { input, correction, keepdim } = varArgs('var', x, options);
  const { out, dims } = reduce('var', input, dim, keepdim, correction);
  return record(out, 'var', [input], (g) => gradOf('var').grad(g, { input, dims, keepdim, correction }), { savesOutput: false });
}

export function std(x: Tensor, dim?: number | number[], options?: VarOptions): Tensor {
  const { input, correction, keepdim } = varArgs('std', x, options);
  const { out: v, dims } = reduce('var', input, dim, keepdim, correction);
  const out = sqrt(v); // v has no graph, so this records nothing
  v.dispose();
  return record(out, 'std', [input], (g) => gradOf('std').grad(g, { input, out, dims, keepdim, correction }));
}

export function logsumexp(x: Tensor, dim: number | number[], keepdim = false): Tensor {
  checkTensor('logsumexp', 'input', x);
  const input = isFloating(x.dtype) ? x : castTo(x, 'f32');
  const { out, dims } = reduce('logsumexp', input, dim, keepdim);
  return record(out, 'logsumexp', [input], (g) => gradOf('logsumexp').grad(g, { input, out, dims, keepdim }));
}

export function softmax(x: Tensor, dim = -1): Tensor {
  checkTensor('softmax', 'input', x);
  [x] = autocastArgs('softmax', x);
  const input = isFloating(x.dtype) ? x : castTo(x, 'f32');
  const d = normDim('softmax', dim, input.ndim);
  const y = wrap(native.softmax(input.handle, d, false));
  return record(y, 'softmax', [input], (g) => gradOf('softmax').grad(g, { out: y, dim: d }));
}

export function logSoftmax(x: Tensor, dim = -1): Tensor {
  checkTensor('logSoftmax', 'input', x);
  [x] = autocastArgs('logSoftmax', x);
  const input = isFloating(x.dtype) ? x : castTo(x, 'f32');
  const d = normDim('logSoftmax', dim, input.ndim);
  const y = wrap(native.softmax(input.handle, d, true));
  return record(y, 'logSoftmax', [input], (g) => gradOf('logSoftmax').grad(g, { out: y, dim: d }));
}
