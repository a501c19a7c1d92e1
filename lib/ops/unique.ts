/**
 * unique: the distinct elements of a tensor, from a stable sort of its elements: a new value starts
 * wherever a sorted element differs from the one before. The count of distinct values sizes the
 * result, so this is a sync point (as torch.unique on CUDA).
 */
import type { Tensor } from '../tensor';
import { argError, checkOptions } from '../errors';
import { checkBool } from '../validate';
import { full, zeros } from './creation';
import { cumsum } from './scan';
import { scatter } from './scatter';
import { scatterAdd } from './indexing';
import { maskedSelect } from './select';
import { cat } from './shape';
import { sort } from './sort';
import { checkTensor } from './util';
import { noGrad } from '../dispatch/grad_mode';

export interface UniqueOptions {
  /**
   * Accepted either way: the values always come sorted ascending (PyTorch leaves the order of
   * sorted=false unspecified).
   */
  sorted?: boolean;
  /** Also return, for every input element, the index of its value in `values` (i64, the input's shape). */
  returnInverse?: boolean;
  /** Also return how many times each value occurs (i64). */
  returnCounts?: boolean;
  /** Not supported (unique slices along a dim): anything but null/undefined is ERR_ARG. */
  dim?: number | null;
}

/** What unique returns when asked for inverse indices or counts. */
export interface UniqueResult {
  /** The distinct values, sorted ascending, in the input's dtype. */
  values: Tensor;
  /** With returnInverse: the index into `values` of each input element (i64, the input's shape). */
  inverseIndices?: Tensor;
  /** With returnCounts: the occurrences of each value (i64). */
  counts?: Tensor;
}

/**
 * The distinct elements of `x` (flattened), sorted ascending, as torch.unique; with
 * `returnInverse` and/or `returnCounts` it returns `{ values, inverseIndices, counts }` instead of
 * the values alone. Every NaN is distinct (NaN ≠ NaN); 0 and −0 are one value. Not differentiable.
 */
export function unique(x: Tensor, options?: UniqueOptions & { returnInverse?: false; returnCounts?: false }): Tensor;
export function unique(x: Tensor, options: UniqueOptions): UniqueResult;
export function unique(x: Tensor, options: UniqueOptions = {}): Tensor | UniqueResult {
  const op = 'unique';
  checkTensor(op, 'input', x);
  const o = checkOptions(op, options, ['sorted', 'returnInverse', 'returnCounts', 'dim']);
  checkBool(op, 'sorted', o.sorted ?? true);
  const wantInverse = checkBool(op, 'returnInverse', o.returnInverse ?? false);
  const wantCounts = checkBool(op, 'returnCounts', o.returnCounts ?? false);
  if (o.dim !== undefined && o.dim !== null)
    throw argError(op, `dim is not supported (unique slices along a dim); got dim ${String(o.dim)} — omit it to take the unique elements`);
  return noGrad(() => {
    const flat = x.reshape([-1]);
    const n = flat.shape[0];
    const { values: sorted, indices } = sort(flat);
    // starts[i]: sorted[i] opens a new value (the first element always does).
    const starts =
      n === 0
        ? full([0], false, { dtype: 'bool', device: x.device })
        : n === 1
          ? full([1], true, { dtype: 'bool', device: x.device })
          : cat([full([1], true, { dtype: 'bool', device: x.device }), sorted.narrow(0, 1, n - 1).ne(sorted.narrow(0, 0, n - 1))]);
    const values = maskedSelect(sorted, starts);
    if (!wantInverse && !wantCounts) return values;
    const group = n === 0 ? zeros([0], { dtype: 'i64', device: x.device }) : cumsum(starts.to('i64'), 0).sub(1);
    const out: UniqueResult = { values };
    if (wantInverse) {
      const inverse = n === 0 ? group : scatter(zeros([n], { dtype: 'i64', device: x.device }), 0, indices, group);
      out.inverseIndices = inverse.reshape([...x.shape]);
    }
    if (wantCounts) {
      const counts = zeros([values.shape[0]], { dtype: 'i64', device: x.device });
      out.counts = n === 0 ? counts : scatterAdd(counts, 0, group, full([n], 1, { dtype: 'i64', device: x.device }));
    }
    return out;
  });
}
