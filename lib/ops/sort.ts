/** Sorting along a dim: sort, argsort and topk (values and i64 indices); gradients in lib/ops/grads/sort.ts. */
import { native } from '../native';
import type { Tensor } from '../tensor';
import { record } from '../dispatch/record';
import { describe } from '../errors';
import { checkTensor, normDim, rangeError, typeError, wrap } from './util';
import type { ValuesIndices } from './reduce';
import { gradOf } from './grads/table';

function checkFlag(op: string, name: string, v: unknown): boolean {
  if (typeof v !== 'boolean') throw typeError(op, `${name} must be a boolean, got ${describe(v)}`);
  return v;
}

/**
 * Sorts along `dim` (default the last): `{ values, indices }` as torch.sort. The sort is always
 * stable (equal values keep their order), so `stable` is accepted either way; NaN sorts above
 * every number, and -0 equals 0.
 */
export function sort(x: Tensor, dim = -1, descending = false, stable = false): ValuesIndices {
  checkTensor('sort', 'input', x);
  checkFlag('sort', 'descending', descending);
  checkFlag('sort', 'stable', stable);
  const d = normDim('sort', dim, x.ndim);
  const [v, i] = native.sort(x.handle, d, descending);
  const values = wrap(v),
    indices = wrap(i);
  record(values, 'sort', [x], (g) => gradOf('sort').grad(g, { input: x, dim: d, indices }), { savesOutput: false, saves: [indices] });
  return { values, indices };
}

/** The indices (i64) that sort `x` along `dim`, as torch.argsort (stable). */
export function argsort(x: Tensor, dim = -1, descending = false, stable = false): Tensor {
  checkTensor('argsort', 'input', x);
  checkFlag('argsort', 'descending', descending);
  checkFlag('argsort', 'stable', stable);
  const [v, i] = native.sort(x.handle, normDim('argsort', dim, x.ndim), descending);
  native.dispose(v);
  return wrap(i);
}

/**
 * The `k` largest (or smallest) values along `dim` and their indices, as torch.topk. Results come
 * sorted either way (`sorted: false` allows any order); among equal values the lower index comes first.
 */
export function topk(x: Tensor, k: number, dim = -1, largest = true, sorted_ = true): ValuesIndices {
  checkTensor('topk', 'input', x);
  checkFlag('topk', 'largest', largest);
  checkFlag('topk', 'sorted', sorted_);
  const d = normDim('topk', dim, x.ndim);
  const size = x.ndim === 0 ? 1 : x.shape[d];
  if (typeof k !== 'number' || !Number.isInteger(k)) throw typeError('topk', `k must be an integer, got ${describe(k)}`);
  if (k < 0 || k > size)
    throw rangeError('topk', `k (${k}) must be in [0, ${size}] for dim ${dim} of shape [${x.shape.join(',')}]`, 'ERR_RANGE');
  const [v, i] = native.topk(x.handle, k, d, largest);
  const values = wrap(v),
    indices = wrap(i);
  record(values, 'topk', [x], (g) => gradOf('topk').grad(g, { input: x, dim: d, indices }), { savesOutput: false, saves: [indices] });
  return { values, indices };
}
