/** Indexing ops: indexSelect, gather, scatterAdd, indexAdd, oneHot; the gradients are in lib/ops/grads/indexing.ts. */
import { native } from '../native';
import { Tensor } from '../tensor';
import { describe } from '../errors';
import { record } from '../dispatch/record';
import { checkOptions } from '../errors';
import { checkTensor, normDim, rangeError, shapeStr, typeError, wrap } from './util';
import { mul } from './elementwise';
import { tensor } from './creation';
import { gradOf } from './grads/table';

function checkIndex(op: string, index: Tensor): void {
  checkTensor(op, 'index', index);
  if (index.dtype !== 'i64' && index.dtype !== 'i32')
    throw typeError(op, `index must be an i64 or i32 tensor, got ${index.dtype}`, 'ERR_DTYPE');
}

export function indexSelect(x: Tensor, dim: number, index: Tensor): Tensor {
  checkTensor('indexSelect', 'input', x);
  checkIndex('indexSelect', index);
  const d = normDim('indexSelect', dim, x.ndim);
  const out = wrap(native.indexSelect(x.handle, d, index.handle));
  return record(out, 'indexSelect', [x], (g) => gradOf('indexSelect').grad(g, { input: x, dim: d, index }), {
    savesOutput: false,
    saves: [index],
  });
}

export function gather(x: Tensor, dim: number, index: Tensor): Tensor {
  checkTensor('gather', 'input', x);
  checkIndex('gather', index);
  const d = normDim('gather', dim, x.ndim);
  const out = wrap(native.gather(x.handle, d, index.handle));
  return record(out, 'gather', [x], (g) => gradOf('gather').grad(g, { input: x, dim: d, index }), { savesOutput: false, saves: [index] });
}

export function scatterAdd(x: Tensor, dim: number, index: Tensor, src: Tensor): Tensor {
  checkTensor('scatterAdd', 'input', x);
  checkIndex('scatterAdd', index);
  checkTensor('scatterAdd', 'src', src);
  const d = normDim('scatterAdd', dim, x.ndim);
  const out = wrap(native.scatterAdd(x.handle, d, index.handle, src.handle));
  return record(out, 'scatterAdd', [x, src], (g) => gradOf('scatterAdd').grad(g, { dim: d, index, src }), {
    savesOutput: false,
    saves: [index],
  });
}

/**
 * One-hot encoding of integer class indices: i64 of shape [...index.shape, numClasses]. Class
 * indices given as JS values (a flat array or typed array) are checked at once; in a tensor they are
 * checked by the kernel, and one outside [0, numClasses) rejects the next sync point (data(),
 * item(), fl.sync()) with ERR_INDEX naming it. numClasses -1 means max(index) + 1 (a sync point).
 */
export function oneHot(index: Tensor | number[] | Int32Array | BigInt64Array, numClasses = -1): Tensor {
  if (!Number.isInteger(numClasses) || numClasses < -1)
    throw rangeError('oneHot', `numClasses must be a non-negative integer (or -1 to infer it), got ${describe(numClasses)}`, 'ERR_RANGE');
  if (!(index instanceof Tensor)) return oneHotOfValues(index, numClasses);
  checkIndex('oneHot', index);
  let n = numClasses;
  if (n === -1) n = index.numel() === 0 ? 0 : Number(wrap(native.reduce('max', index.handle, [], false)).itemSync()) + 1;
  return wrap(native.oneHot(index.handle, n));
}

function oneHotOfValues(values: number[] | Int32Array | BigInt64Array, numClasses: number): Tensor {
  if (!Array.isArray(values) && !(values instanceof Int32Array) && !(values instanceof BigInt64Array))
    throw typeError('oneHot', `index must be a Tensor, an array of integers, an Int32Array or a BigInt64Array, got ${describe(values)}`);
  const list = Array.from(values as ArrayLike<number | bigint>, Number);
  for (const v of list)
    if (typeof v !== 'number' || !Number.isInteger(v)) throw typeError('oneHot', `class indices must be integers, got ${describe(v)}`);
  const n = numClasses === -1 ? list.reduce((m, v) => Math.max(m, v + 1), 0) : numClasses;
  for (const v of list)
    if (v < 0 || v >= n) throw rangeError('oneHot', `class index ${v} is out of range for numClasses ${n}`, 'ERR_INDEX');
  return oneHot(tensor(list, { dtype: 'i64' }), n);
}

/**
 * `x` with `alpha · source` added along `dim` at the positions `index` (1-D) names, as
 * torch.index_add: out[..., index[j], ...] += alpha · source[..., j, ...]; repeated indices add up.
 */
export function indexAdd(x: Tensor, dim: number, index: Tensor, source: Tensor, options?: { alpha?: number }): Tensor {
  checkTensor('indexAdd', 'input', x);
  checkIndex('indexAdd', index);
  checkTensor('indexAdd', 'source', source);
  checkOptions('indexAdd', options, ['alpha']);
  const alpha = options?.alpha ?? 1;
  if (typeof alpha !== 'number' || Number.isNaN(alpha)) throw typeError('indexAdd', `alpha must be a number, got ${describe(alpha)}`);
  if (index.ndim > 1) throw rangeError('indexAdd', `index must be 1-D, got shape ${shapeStr(index.shape)}`);
  if (source.dtype !== x.dtype) throw typeError('indexAdd', `source is ${source.dtype}, input is ${x.dtype}`, 'ERR_DTYPE');
  const d = normDim('indexAdd', dim, x.ndim);
  const lead = x.ndim === 0 ? [] : [...x.shape.slice(0, d), index.numel(), ...x.shape.slice(d + 1)];
  if (source.ndim !== lead.length || source.shape.some((s, i) => s !== lead[i]))
    throw rangeError(
      'indexAdd',
      `source ${shapeStr(source.shape)} must have shape ${shapeStr(lead)} (input ${shapeStr(x.shape)}, ${index.numel()} indices along dim ${d})`,
    );
  if (x.ndim === 0) {
    const flat = (t: Tensor) => wrap(native.reshape(t.handle, [1]));
    return indexAdd(flat(x), 0, flat(index), flat(source), options).reshape([]);
  }
  // Scatter-add along dim with the index broadcast over every other dim of source.
  const col = wrap(
    native.reshape(
      index.handle,
      lead.map((s, i) => (i === d ? s : 1)),
    ),
  );
  const idx = wrap(native.expand(col.handle, lead));
  const scaled = alpha === 1 ? source : mul(source, alpha);
  const out = wrap(native.scatterAdd(x.handle, d, idx.handle, scaled.detach().handle));
  return record(out, 'indexAdd', [x, source], (g) => gradOf('indexAdd').grad(g, { dim: d, index, source, alpha }), {
    savesOutput: false,
    saves: [index],
  });
}
