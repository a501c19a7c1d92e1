/** Shape ops: reshape/view/flatten/squeeze/unsqueeze (free views), expand, transpose/permute
 *  (copies), narrow/slice, cat/stack/split/chunk; the gradients are in lib/ops/grads/shape.ts. */
import { native } from '../native';
import type { Tensor } from '../tensor';
import { record } from '../dispatch/record';
import { shareVersion } from '../dispatch/version';
import { checkInt, checkNumber, valueText } from '../validate';
import { checkTensor, normDim, rangeError, shapeStr, typeError, wrap } from './util';
import { computeStride, stridesOf, withStrides } from './strides';
import { flockError } from '../errors';
import { gradOf } from './grads/table';

/** Accepts `f(2, 3)` and `f([2, 3])`. */
export function shapeArgs(args: number[] | [number[]]): number[] {
  return Array.isArray(args[0]) ? [...(args[0] as number[])] : (args as number[]);
}

function checkInts(op: string, name: string, v: unknown): number[] {
  if (!Array.isArray(v) || !v.every((d) => typeof d === 'number' && Number.isInteger(d)))
    throw typeError(op, `${name} must be an array of integers, got ${valueText(v)}`);
  return v as number[];
}

export function reshape(x: Tensor, shape: number[]): Tensor {
  checkTensor('reshape', 'input', x);
  checkInts('reshape', 'shape', shape);
  const out = shareVersion(wrap(native.reshape(x.handle, shape)), x);
  // A view where PyTorch's reshape can view (strides kept), else a contiguous copy's strides.
  if (x._strides) {
    const st = computeStride(x.shape, x._strides, out.shape);
    if (st) withStrides(out, st);
  }
  return record(out, 'reshape', [x], (g) => gradOf('reshape').grad(g, { input: x }));
}

/**
 * `x` seen with another shape, as torch.Tensor.view: possible whenever the new shape can be written
 * with strides over x's memory (PyTorch's computeStride, on the strides PyTorch would give x, see
 * lib/ops/strides.ts); otherwise ERR_SHAPE, with PyTorch's advice to use reshape (which copies).
 */
export function view(x: Tensor, shape: number[]): Tensor {
  checkTensor('view', 'input', x);
  checkInts('view', 'shape', shape);
  if (x._strides) {
    const numel = x.shape.reduce((a, b) => a * b, 1);
    const known = shape.reduce((a, b) => (b === -1 ? a : a * b), 1);
    const inferred = shape.map((d) => (d === -1 && known > 0 ? numel / known : d));
    if (
      inferred.every((d) => d >= 0 && Number.isInteger(d)) &&
      inferred.reduce((a, b) => a * b, 1) === numel &&
      !computeStride(x.shape, x._strides, inferred)
    )
      throw flockError(
        'ERR_SHAPE',
        'view',
        `view size is not compatible with input tensor's size and stride (at least one dimension spans across two contiguous subspaces): shape ${shapeStr(x.shape)}, stride ${shapeStr(x._strides)}, requested ${shapeStr(shape)}. Use .reshape(...) instead.`,
      );
  }
  return reshape(x, shape);
}

/** `x` if it is contiguous (PyTorch's strides), else a tensor of its values that is (here, without a copy). */
export function contiguous(x: Tensor): Tensor {
  checkTensor('contiguous', 'input', x);
  if (!x._strides) return x;
  const out = shareVersion(wrap(native.reshape(x.handle, [...x.shape])), x);
  return record(out, 'contiguous', [x], (g) => [g], { savesOutput: false });
}

export function flatten(x: Tensor, startDim = 0, endDim = -1): Tensor {
  checkTensor('flatten', 'input', x);
  if (x.ndim === 0) return reshape(x, [1]);
  const s = normDim('flatten', startDim, x.ndim),
    e = normDim('flatten', endDim, x.ndim);
  if (s > e) throw rangeError('flatten', `startDim ${startDim} comes after endDim ${endDim}`, 'ERR_INDEX');
  const shape = [...x.shape.slice(0, s), x.shape.slice(s, e + 1).reduce((a, b) => a * b, 1), ...x.shape.slice(e + 1)];
  return reshape(x, shape);
}

/**
 * Removes size-1 dims: all of them, the one `dim` names, or each of a list of dims (torch 2.0);
 * a named dim whose size is not 1 is left as it is, as in PyTorch.
 */
export function squeeze(x: Tensor, dim?: number | number[]): Tensor {
  checkTensor('squeeze', 'input', x);
  if (dim === undefined)
    return reshape(
      x,
      x.shape.filter((s) => s !== 1),
    );
  if (Array.isArray(dim)) checkInts('squeeze', 'dims', dim);
  const dims = (Array.isArray(dim) ? dim : [dim]).map((d) => normDim('squeeze', d, x.ndim));
  if (new Set(dims).size !== dims.length) throw typeError('squeeze', `dims ${JSON.stringify(dim)} name a dim more than once`);
  if (x.ndim === 0 || dims.every((d) => x.shape[d] !== 1)) return x;
  return reshape(
    x,
    x.shape.filter((s, i) => !(s === 1 && dims.includes(i))),
  );
}

export function unsqueeze(x: Tensor, dim: number): Tensor {
  checkTensor('unsqueeze', 'input', x);
  const d = normDim('unsqueeze', dim, x.ndim + 1);
  const shape = [...x.shape];
  shape.splice(d, 0, 1);
  return reshape(x, shape);
}

export function expand(x: Tensor, shape: number[]): Tensor {
  checkTensor('expand', 'input', x);
  checkInts('expand', 'shape', shape);
  const out = wrap(native.expand(x.handle, shape));
  if (out.shape.every((s, i) => s === x.shape[i]) && out.shape.length === x.shape.length) return x;
  // PyTorch's expand: stride 0 along every broadcast dim.
  const st = stridesOf(x),
    lead = out.shape.length - x.shape.length;
  withStrides(
    out,
    out.shape.map((s, i) => (i < lead || (x.shape[i - lead] === 1 && s !== 1) ? 0 : st[i - lead])),
  );
  return record(out, 'expand', [x], (g) => gradOf('expand').grad(g, { input: x }), { savesOutput: false });
}

export function permute(x: Tensor, dims: number[]): Tensor {
  checkTensor('permute', 'input', x);
  checkInts('permute', 'dims', dims);
  const out = wrap(native.permute(x.handle, dims));
  const norm = dims.map((d) => normDim('permute', d, x.ndim));
  // The native op returns a view of x's storage when no dim of size > 1 moves.
  if (norm.every((d, i) => d === i || x.shape[d] === 1)) shareVersion(out, x);
  const st = stridesOf(x);
  withStrides(
    out,
    norm.map((d) => st[d]),
  );
  return record(out, 'permute', [x], (g) => gradOf('permute').grad(g, { dims: norm }));
}

export function transpose(x: Tensor, dim0 = 0, dim1 = 1): Tensor {
  checkTensor('transpose', 'input', x);
  if (x.ndim < 2 && dim0 === 0 && dim1 === 1) return x;
  const a = normDim('transpose', dim0, x.ndim),
    b = normDim('transpose', dim1, x.ndim);
  const dims = x.shape.map((_, i) => i);
  [dims[a], dims[b]] = [dims[b], dims[a]];
  return permute(x, dims);
}

export function narrow(x: Tensor, dim: number, start: number, length: number): Tensor {
  checkTensor('narrow', 'input', x);
  const d = normDim('narrow', dim, x.ndim);
  const out = wrap(native.narrow(x.handle, d, start, length));
  // PyTorch's narrow keeps x's strides: only a narrowing of dim 0 (or after size-1 dims) stays contiguous.
  if (out !== x) withStrides(out, stridesOf(x));
  // A view of x's storage when the dims before `d` are all 1 (else the native op copies).
  if (x.shape.slice(0, d).every((s) => s === 1)) shareVersion(out, x);
  const begin = start < 0 ? start + x.shape[d] : start;
  return record(out, 'narrow', [x], (g) => gradOf('narrow').grad(g, { input: x, dim: d, start: begin, length }), { savesOutput: false });
}

/** Python-style slice along `dim`: [start, end), negative indices from the end, clamped. */
export function slice(x: Tensor, dim: number, start = 0, end?: number): Tensor {
  checkTensor('slice', 'input', x);
  checkNumber('slice', 'start', start, { integer: true, infinite: true });
  if (end !== undefined) checkNumber('slice', 'end', end, { integer: true, infinite: true });
  const d = normDim('slice', dim, x.ndim);
  const n = x.shape[d];
  const clampIdx = (i: number) => Math.min(Math.max(i < 0 ? i + n : i, 0), n);
  const s = clampIdx(start),
    e = clampIdx(end ?? n);
  return narrow(x, d, s, Math.max(0, e - s));
}

/**
 * The slice at `index` along `dim`, with that dim removed, as torch.select (`x.select(0, -1)` is
 * the last row). Negative dims and indices count from the end; the gradient flows back through it.
 */
export function select(x: Tensor, dim: number, index: number): Tensor {
  checkTensor('select', 'input', x);
  if (x.ndim === 0) throw rangeError('select', 'cannot select from a 0-d tensor', 'ERR_INDEX');
  const d = normDim('select', dim, x.ndim);
  const n = x.shape[d];
  if (typeof index !== 'number' || !Number.isInteger(index)) throw typeError('select', `index must be an integer, got ${valueText(index)}`);
  if (index < -n || index >= n) throw rangeError('select', `index ${index} is out of range for dim ${dim} of size ${n}`, 'ERR_INDEX');
  return squeeze(narrow(x, d, index < 0 ? index + n : index, 1), d);
}

export function cat(xs: Tensor[], dim = 0): Tensor {
  if (!Array.isArray(xs) || xs.length === 0) throw typeError('cat', 'expected a non-empty array of tensors');
  xs.forEach((t, i) => checkTensor('cat', `tensors[${i}]`, t));
  const first = xs[0];
  xs.forEach((t, i) => {
    if (t.dtype !== first.dtype) throw typeError('cat', `tensors[${i}] is ${t.dtype}, expected ${first.dtype}`, 'ERR_DTYPE');
  });
  const d = normDim('cat', dim, first.ndim);
  const out = wrap(
    native.cat(
      xs.map((t) => t.handle),
      d,
    ),
  );
  return record(out, 'cat', xs, (g) => gradOf('cat').grad(g, { tensors: xs, dim: d }), { savesOutput: false });
}

export function stack(xs: Tensor[], dim = 0): Tensor {
  if (!Array.isArray(xs) || xs.length === 0) throw typeError('stack', 'expected a non-empty array of tensors');
  xs.forEach((t, i) => checkTensor('stack', `tensors[${i}]`, t));
  const s0 = xs[0].shape;
  xs.forEach((t, i) => {
    if (t.shape.length !== s0.length || t.shape.some((s, j) => s !== s0[j]))
      throw rangeError('stack', `tensors[${i}] has shape ${shapeStr(t.shape)}, expected ${shapeStr(s0)}`);
  });
  const d = normDim('stack', dim, s0.length + 1);
  return cat(
    xs.map((t) => unsqueeze(t, d)),
    d,
  );
}

export function split(x: Tensor, sizeOrSections: number | number[], dim = 0): Tensor[] {
  checkTensor('split', 'input', x);
  const d = normDim('split', dim, x.ndim);
  const n = x.shape[d];
  let sizes: number[];
  if (typeof sizeOrSections === 'number') {
    checkInt('split', 'split size', sizeOrSections, 1);
    sizes = [];
    for (let at = 0; at < n; at += sizeOrSections) sizes.push(Math.min(sizeOrSections, n - at));
    if (n === 0) sizes = [0];
  } else {
    sizes = checkInts('split', 'sections', sizeOrSections);
    if (sizes.reduce((a, b) => a + b, 0) !== n || sizes.some((s) => s < 0))
      throw rangeError('split', `sections ${JSON.stringify(sizes)} do not sum to ${n} (dim ${d} of ${shapeStr(x.shape)})`);
  }
  let at = 0;
  return sizes.map((s) => {
    const part = narrow(x, d, at, s);
    at += s;
    return part;
  });
}

export function chunk(x: Tensor, chunks: number, dim = 0): Tensor[] {
  checkTensor('chunk', 'input', x);
  checkInt('chunk', 'chunks', chunks, 1);
  const d = normDim('chunk', dim, x.ndim);
  return split(x, Math.max(1, Math.ceil(x.shape[d] / chunks)), d);
}
