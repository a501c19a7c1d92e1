/**
 * PyTorch's `x[...] = v` (`x.setIndex(entries, v)`) and `index_put_` / `index_put`
 * (`x.indexPut_(indices, values, { accumulate })`). Both find the flat positions the index selects
 * (the read of lib/ops/index_method.ts applied to 0..numel-1) and scatter the value there, or add it
 * with `accumulate` (duplicates summed); the in-place forms write the result into x by the rules of
 * lib/ops/inplace.ts (version counters, no leaf that requires grad, history rebased). A write with
 * only integers, slices, the ellipsis and newaxis into a view of x's storage, outside autograd,
 * copies the value straight into that view.
 */
import { native } from '../native';
import { Tensor } from '../tensor';
import { noGrad } from '../dispatch/grad_mode';
import { checkValueFits } from '../dtype';
import { checkOptions, describe } from '../errors';
import { castTo, checkTensor, held, rangeError, shapeStr, typeError, wrap } from './util';
import { scatterAdd } from './indexing';
import { scatter } from './scatter';
import { expand, reshape } from './shape';
import { copy_, inPlace } from './inplace';
import { applyAdvanced, type IndexEntry, planIndex } from './index_method';

export interface IndexPutOptions {
  /** Add the values into x (repeated positions summed) instead of writing them (default false). */
  accumulate?: boolean;
}

/** The value as a tensor of x's dtype on x's device (a number must fit x's dtype). */
function valueTensor(op: string, x: Tensor, value: unknown, anyCast: boolean): Tensor {
  if (typeof value === 'number' || typeof value === 'boolean') {
    const v = Number(value);
    checkValueFits(op, v, x.dtype);
    return wrap(native.full([], x.dtype, x.device, v));
  }
  if (!(value instanceof Tensor)) throw typeError(op, `value must be a Tensor, a number or a boolean, got ${describe(value)}`);
  checkTensor(op, 'value', value);
  if (!anyCast && value.dtype !== x.dtype)
    throw typeError(
      op,
      `index put requires the source and destination dtypes to match, got ${x.dtype} for the destination and ${value.dtype} for the source`,
      'ERR_DTYPE',
    );
  const moved = value.device === x.device ? value : value.to(x.device);
  return castTo(moved, x.dtype);
}

/** `value` without the leading size-1 dims it has beyond `shape`'s rank (as PyTorch's setitem), broadcast to `shape`. */
function fitTo(op: string, value: Tensor, shape: readonly number[]): Tensor {
  let v = value;
  let lead = 0;
  while (v.ndim - lead > shape.length && v.shape[lead] === 1) lead++;
  if (lead > 0) v = reshape(v, v.shape.slice(lead));
  const fits = v.ndim <= shape.length && v.shape.every((s, i) => s === 1 || s === shape[shape.length - v.ndim + i]);
  if (!fits)
    throw rangeError(
      op,
      `shape mismatch: value tensor of shape ${shapeStr(value.shape)} cannot be broadcast to indexing result of shape ${shapeStr(shape)}`,
    );
  return expand(v, [...shape]);
}

function hasAdvanced(entries: readonly IndexEntry[]): boolean {
  return entries.some((e) => e instanceof Tensor || typeof e === 'boolean');
}

/**
 * `x` with `value` written (or added, `accumulate`) at the elements `entries` select, out of place
 * and recorded: the gradient of x is g where nothing was written (all of g with accumulate), the
 * value's g at the positions it went to, summed over its broadcast.
 */
function put(op: string, x: Tensor, entries: readonly IndexEntry[], value: Tensor, accumulate: boolean, zeroDimSelects: boolean): Tensor {
  // The flat positions of the selected elements, as a tensor of the read's shape.
  const where = noGrad(() => {
    const positions = wrap(native.reshape(held(native.arange(0, x.numel(), 1, 'i64', x.device)), [...x.shape]));
    const plan = planIndex(op, positions, entries, { zeroDimSelects });
    return plan.indices.some((t) => t !== null) ? applyAdvanced(op, plan) : plan.result;
  });
  const v = fitTo(op, value, where.shape);
  const n = where.numel();
  if (n === 0) return reshape(x, [...x.shape]);
  const flat = reshape(x, [x.numel()]);
  const at = wrap(native.reshape(where.handle, [n]));
  const src = reshape(v, [n]);
  const out = accumulate ? scatterAdd(flat, 0, at, src) : scatter(flat, 0, at, src);
  return reshape(out, [...x.shape]);
}

/** The entries of setIndex: an array is the list of entries, anything else one entry. */
function entryList(index: IndexEntry | readonly IndexEntry[]): readonly IndexEntry[] {
  return Array.isArray(index) ? (index as readonly IndexEntry[]) : [index as IndexEntry];
}

/**
 * PyTorch's `x[index] = value`, in place: `x.setIndex([0, null, [1, 3]], v)` is `x[0, :, 1:3] = v`
 * (the entries of {@link index}; a single non-array entry may be given alone: `x.setIndex(0, v)`).
 * The value is a number or a tensor that broadcasts to the indexed shape (leading size-1 dims beyond
 * it are dropped, as PyTorch), cast to x's dtype and moved to its device. Where an index tensor
 * repeats a position, one of the writes wins. Recorded by autograd as the other in-place ops.
 */
export function setIndex(x: Tensor, index: IndexEntry | readonly IndexEntry[], value: Tensor | number | boolean): Tensor {
  checkTensor('setIndex', 'self', x);
  const entries = entryList(index);
  const v = valueTensor('setIndex', x, value, true);
  const direct = hasAdvanced(entries)
    ? undefined
    : () => {
        // Only a view of x's own storage (it shares x's version counter) can take the write.
        const view = planIndex('setIndex', x, entries).result;
        if (view._version !== x._version) return false;
        noGrad(() => copy_(view, fitTo('setIndex', v, view.shape)));
        return true;
      };
  return inPlace('setIndex', x, [v], false, (before) => put('setIndex', before, entries, v, false, true), true, direct);
}

function checkIndices(op: string, indices: unknown): readonly (Tensor | null)[] {
  if (!Array.isArray(indices))
    throw typeError(op, `indices must be an array of index tensors (or null for a whole dim), got ${describe(indices)}`);
  indices.forEach((t, i) => {
    if (t !== null && !(t instanceof Tensor))
      throw typeError(op, `indices[${i}] must be an index or mask tensor (or null for a whole dim), got ${describe(t)}`);
  });
  return indices as (Tensor | null)[];
}

function accumulateOf(op: string, options: IndexPutOptions | undefined): boolean {
  checkOptions(op, options, ['accumulate']);
  const a = options?.accumulate ?? false;
  if (typeof a !== 'boolean') throw typeError(op, `accumulate must be a boolean, got ${describe(a)}`);
  return a;
}

/**
 * `x` with `values` put at the positions the index tensors give (torch.index_put): `indices[k]`
 * indexes dim k (null keeps it whole; bool masks select as in {@link index}), the index tensors
 * broadcast together, `values` (x's dtype) broadcasts to the indexed shape. With `accumulate`
 * the values are added and repeated positions sum; without, one of the repeated writes wins.
 */
export function indexPut(x: Tensor, indices: readonly (Tensor | null)[], values: Tensor | number, options?: IndexPutOptions): Tensor {
  checkTensor('indexPut', 'input', x);
  const accumulate = accumulateOf('indexPut', options);
  const list = checkIndices('indexPut', indices);
  return put('indexPut', x, list, valueTensor('indexPut', x, values, false), accumulate, false);
}

/** {@link indexPut} in place (torch.Tensor.index_put_), recorded by autograd as the other in-place ops. */
export function indexPut_(x: Tensor, indices: readonly (Tensor | null)[], values: Tensor | number, options?: IndexPutOptions): Tensor {
  checkTensor('indexPut_', 'self', x);
  const accumulate = accumulateOf('indexPut_', options);
  const list = checkIndices('indexPut_', indices);
  const v = valueTensor('indexPut_', x, values, false);
  return inPlace('indexPut_', x, [v], false, (before) => put('indexPut_', before, list, v, accumulate, false), true);
}
