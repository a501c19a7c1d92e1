/**
 * PyTorch's `x[...]` as `x.index(...entries)`: basic indexing (integers, slices, the ellipsis,
 * newaxis) by select/narrow/unsqueeze, then advanced indexing (index and mask tensors) by one
 * indexSelect over the indexed dims merged into one, with PyTorch's rules for where the advanced
 * dims go. Every step is a recorded op, so the result is differentiable. The parsing here is shared
 * with the writes (lib/ops/index_put.ts).
 */
import { native } from '../native';
import { Tensor } from '../tensor';
import { describe } from '../errors';
import { castTo, checkTensor, rangeError, shapeStr, typeError, wrap, held } from './util';
import { indexSelect } from './indexing';
import { nonzero } from './select';
import { narrow, permute, reshape, select, unsqueeze } from './shape';

/** The ellipsis entry, `x[..., 0]`: `x.index(fl.ellipsis, 0)` (the string '...' is the same). */
export const ellipsis = '...' as const;
/** The new-axis entry, PyTorch's None (`x[None]`): `x.index(fl.newaxis)` (the string 'newaxis' is the same). */
export const newaxis = 'newaxis' as const;

/** A Python slice `start:stop:step`: null or undefined for an open end (or step 1); step > 0. */
export type IndexSlice = [start: number | null | undefined, stop: number | null | undefined, step?: number | null];

/**
 * One entry of an index: an integer (negative from the end; removes the dim), null (`:`), a slice
 * `[start, stop]` / `[start, stop, step]`, an i64/i32 index tensor or a bool mask tensor (advanced
 * indexing), the ellipsis ('...'), 'newaxis' (PyTorch's None), or a boolean (as Python's True/False).
 */
export type IndexEntry = number | null | boolean | IndexSlice | Tensor | typeof ellipsis | typeof newaxis;

/** Where basic indexing left off: the result so far and, per dim of it, the index tensor (if any). */
export interface IndexPlan {
  result: Tensor;
  /** Per dim of `result`: an i64 index tensor on its device, or null for a dim kept whole. */
  indices: (Tensor | null)[];
}

interface Parse {
  /** A 0-d integer tensor selects as an integer does (PyTorch's `x[t]`), not as an advanced index (index_put_). */
  zeroDimSelects: boolean;
}

const isSlice = (e: unknown): e is IndexSlice => Array.isArray(e);

/** How many of x's dims an entry consumes (for the ellipsis and the too-many check). */
function consumes(op: string, e: IndexEntry, at: number): number {
  if (e === null || typeof e === 'number' || isSlice(e)) return 1;
  if (e === ellipsis || e === newaxis || typeof e === 'boolean') return 0;
  if (e instanceof Tensor) {
    checkTensor(op, `index entry ${at}`, e);
    if (e.dtype === 'bool' || e.dtype === 'u8') return e.ndim;
    if (e.dtype === 'i64' || e.dtype === 'i32') return 1;
    throw typeError(
      op,
      `tensors used as indices must be i64, i32 or bool (a mask) tensors, got ${e.dtype} at index entry ${at}`,
      'ERR_DTYPE',
    );
  }
  throw typeError(
    op,
    `index entry ${at} is ${describe(e)}: an entry is an integer, null (:), [start, stop] or [start, stop, step], ` +
      `an index or mask tensor, '...' (fl.ellipsis) or 'newaxis' (fl.newaxis); for a list of indices use a tensor (fl.tensor([...], { dtype: 'i64' }))`,
  );
}

/** Python's slice.indices for step > 0: the start and element count. */
function sliceRange(op: string, s: IndexSlice, at: number, n: number): { start: number; count: number; step: number } {
  if (s.length < 2 || s.length > 3)
    throw typeError(
      op,
      `index entry ${at}: a slice is [start, stop] or [start, stop, step], got an array of ${s.length}; ` +
        'for a list of indices use a tensor (fl.tensor([...], { dtype: "i64" }))',
    );
  const [a, b, c] = s;
  for (const [name, v] of [
    ['start', a],
    ['stop', b],
    ['step', c],
  ] as const)
    if (v !== null && v !== undefined && (typeof v !== 'number' || !Number.isInteger(v)))
      throw typeError(op, `index entry ${at}: slice ${name} must be an integer, null or undefined, got ${describe(v)}`);
  const step = c ?? 1;
  if (step <= 0) throw typeError(op, `index entry ${at}: slice step must be greater than zero, got ${step} (as PyTorch)`);
  const bound = (v: number | null | undefined, open: number) => {
    if (v === null || v === undefined) return open;
    return Math.min(Math.max(v < 0 ? v + n : v, 0), n);
  };
  const start = bound(a, 0),
    stop = bound(b, n);
  return { start, step, count: stop > start ? Math.ceil((stop - start) / step) : 0 };
}

function checkInt(op: string, i: number, dim: number, n: number): number {
  if (i < -n || i >= n) throw rangeError(op, `index ${i} is out of bounds for dimension ${dim} with size ${n}`, 'ERR_INDEX');
  return i < 0 ? i + n : i;
}

/** An i64 tensor of `values` on `device`. */
function longs(values: number[], device: string): Tensor {
  return wrap(native.fromBuffer(BigInt64Array.from(values, BigInt), [values.length], 'i64', device));
}

/**
 * Applies the basic entries of `entries` to `x` (views where flockml's storage allows, as select
 * and narrow are) and collects the index tensors, as PyTorch's applySlicing does.
 */
export function planIndex(op: string, x: Tensor, entries: readonly IndexEntry[], parse: Parse = { zeroDimSelects: true }): IndexPlan {
  checkTensor(op, 'input', x);
  let used = 0,
    dots = 0;
  entries.forEach((e, at) => {
    used += consumes(op, e, at);
    if (e === ellipsis) dots++;
  });
  if (dots > 1) throw typeError(op, `an index can only have a single ellipsis ('...'), got ${dots}`);
  if (used > x.ndim) throw rangeError(op, `too many indices for tensor of dimension ${x.ndim} (the index uses ${used})`, 'ERR_INDEX');
  let result = x;
  const indices: (Tensor | null)[] = [];
  // `dim` walks result's dims, `real` x's (for messages, as PyTorch's real_dim).
  let dim = 0,
    real = 0;
  const record = (t: Tensor) => {
    while (indices.length < dim) indices.push(null);
    indices[dim] = t;
    dim++;
  };
  const selectAt = (i: number) => {
    result = select(result, dim, checkInt(op, i, real, result.shape[dim]));
    real++;
  };
  const boolAt = (b: boolean) => {
    result = unsqueeze(result, dim);
    record(longs(b ? [0] : [], x.device));
  };
  entries.forEach((e, at) => {
    if (typeof e === 'number') {
      if (!Number.isInteger(e)) throw typeError(op, `index entry ${at} must be an integer, got ${e}`);
      selectAt(e);
    } else if (e === null) {
      dim++;
      real++;
    } else if (e === ellipsis) {
      dim += x.ndim - used;
      real += x.ndim - used;
    } else if (e === newaxis) {
      result = unsqueeze(result, dim);
      dim++;
    } else if (typeof e === 'boolean') {
      boolAt(e);
    } else if (isSlice(e)) {
      const n = result.shape[dim];
      const { start, count, step } = sliceRange(op, e, at, n);
      // A strided slice is a copy (flockml's storage is contiguous); a step that takes one element is not strided.
      result =
        step === 1 || count <= 1
          ? narrow(result, dim, start, count)
          : indexSelect(result, dim, wrap(native.arange(start, start + count * step, step, 'i64', result.device)));
      dim++;
      real++;
    } else {
      const t = e.device === x.device ? e : e.to(x.device);
      if (t.dtype === 'bool' || t.dtype === 'u8') {
        if (t.ndim === 0) {
          boolAt(Number(t.itemSync()) !== 0);
          return;
        }
        const have = result.shape.slice(dim, dim + t.ndim);
        t.shape.forEach((s, j) => {
          if (s !== have[j])
            throw rangeError(
              op,
              `the shape of the mask ${shapeStr(t.shape)} at index ${j} does not match the shape of the indexed tensor ${shapeStr(result.shape)} at index ${dim + j}`,
            );
        });
        for (const c of nonzero(t.dtype === 'bool' ? t : t.bool(), { asTuple: true })) record(c);
        real += t.ndim;
      } else if (t.ndim === 0 && parse.zeroDimSelects) {
        selectAt(Number(t.itemSync()));
      } else {
        record(castTo(t, 'i64'));
        real++;
      }
    }
  });
  while (indices.length < result.ndim) indices.push(null);
  return { result, indices };
}

function broadcastShapes(op: string, shapes: readonly (readonly number[])[]): number[] {
  const n = Math.max(...shapes.map((s) => s.length));
  const out = new Array<number>(n).fill(1);
  for (const s of shapes)
    s.forEach((d, i) => {
      const k = n - s.length + i;
      if (d === out[k] || d === 1) return;
      if (out[k] !== 1)
        throw rangeError(
          op,
          `shape mismatch: indexing tensors could not be broadcast together with shapes ${shapes.map(shapeStr).join(', ')}`,
        );
      out[k] = d;
    });
  return out;
}

/**
 * `i` with negative values counted from the end of a dim of size `n`; values out of [-n, n) are
 * left as they were, so the gather that reads them names them (ERR_INDEX at the next sync point).
 */
function wrapNegative(i: Tensor, n: number): Tensor {
  const zero = held(native.full([], 'i64', i.device, 0));
  const plus = wrap(native.binary('add', i.handle, held(native.full([], 'i64', i.device, n))));
  const fromEnd = held(native.binary('ge', plus.handle, zero));
  const negative = held(native.binary('lt', i.handle, zero));
  return wrap(native.where(negative, held(native.where(fromEnd, plus.handle, i.handle)), i.handle));
}

/**
 * The advanced part: the index tensors broadcast together and their dims gathered into one, placed
 * where PyTorch places them (where the first indexed dim was when the indexed dims are adjacent,
 * else in front).
 */
export function applyAdvanced(op: string, plan: IndexPlan): Tensor {
  let { result } = plan;
  let dims = plan.indices.flatMap((t, d) => (t ? [d] : []));
  const tensors = dims.map((d) => plan.indices[d] as Tensor);
  const shape = broadcastShapes(
    op,
    tensors.map((t) => t.shape),
  );
  const adjacent = dims.every((d, j) => d === dims[0] + j);
  if (!adjacent) {
    const rest = result.shape.map((_, d) => d).filter((d) => !dims.includes(d));
    result = permute(result, [...dims, ...rest]);
    dims = dims.map((_, j) => j);
  }
  const first = dims[0];
  const sizes = dims.map((d) => result.shape[d]);
  const count = shape.reduce((a, b) => a * b, 1);
  // One linear index into the indexed dims merged; with several, each part is first checked against
  // its own dim by a gather from 0..n-1 (an out-of-range part must not alias a valid position).
  let linear: Tensor | null = null;
  let stride = 1;
  for (let j = tensors.length - 1; j >= 0; j--) {
    let part = wrap(native.reshape(wrapNegative(expandTo(tensors[j], shape), sizes[j]).handle, [count]));
    if (tensors.length > 1) part = wrap(native.indexSelect(held(native.arange(0, sizes[j], 1, 'i64', part.device)), 0, part.handle));
    if (stride !== 1) part = wrap(native.binary('mul', part.handle, held(native.full([], 'i64', part.device, stride))));
    linear = linear ? wrap(native.binary('add', linear.handle, part.handle)) : part;
    stride *= sizes[j];
  }
  const pre = result.shape.slice(0, first),
    post = result.shape.slice(first + dims.length);
  const merged = reshape(result, [...pre, stride, ...post]);
  return reshape(indexSelect(merged, first, linear as Tensor), [...pre, ...shape, ...post]);
}

function expandTo(t: Tensor, shape: number[]): Tensor {
  if (t.ndim === shape.length && t.shape.every((s, i) => s === shape[i])) return t;
  return wrap(native.expand(held(native.reshape(t.handle, [...new Array(shape.length - t.ndim).fill(1), ...t.shape])), shape));
}

/** The entries of a call: `x.index(0, null, [1, 3])`. */
function entriesOf(op: string, entries: readonly IndexEntry[]): readonly IndexEntry[] {
  if (!Array.isArray(entries)) throw typeError(op, `expected index entries, got ${describe(entries)}`);
  return entries;
}

/**
 * PyTorch's `x[...]`: `x.index(0, null, [1, 3], fl.tensor([2, 0]))` is `x[0, :, 1:3, [2, 0]]`.
 * Each entry is one of {@link IndexEntry}. With only integers, slices of step 1, nulls, the
 * ellipsis and newaxis the result is a view where flockml's contiguous storage allows one (as
 * select and narrow: the dims before the first one cut are consumed by integers or of size 1), so
 * writes through it show in `x`; otherwise, and with index tensors, masks or a step > 1, it is a
 * copy. Index tensors broadcast together; an index tensor's values are checked when the gather
 * runs (ERR_INDEX at the next sync point), integers at once (ERR_INDEX naming the dim and size).
 * A bool mask's true elements are counted first (a sync point), as for maskedSelect.
 */
export function index(x: Tensor, ...entries: IndexEntry[]): Tensor {
  const plan = planIndex('index', x, entriesOf('index', entries));
  if (plan.indices.some((t) => t !== null)) return applyAdvanced('index', plan);
  // x[()] is a view of all of x, not x itself (as PyTorch).
  return plan.result === x ? reshape(x, [...x.shape]) : plan.result;
}
