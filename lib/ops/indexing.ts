/** Indexing ops: indexSelect, gather, scatterAdd, oneHot, and their gradients. */
import { native } from '../native';
import type { Tensor } from '../tensor';
import { record } from '../autograd/node';
import { checkTensor, normDim, rangeError, typeError, wrap } from './util';
import { eq } from './elementwise';
import { arange } from './creation';

function checkIndex(op: string, index: Tensor): void {
  checkTensor(op, 'index', index);
  if (index.dtype !== 'i64' && index.dtype !== 'i32') throw typeError(op, `index must be an i64 or i32 tensor, got ${index.dtype}`, 'ERR_DTYPE');
}

export function indexSelect(x: Tensor, dim: number, index: Tensor): Tensor {
  checkTensor('indexSelect', 'input', x);
  checkIndex('indexSelect', index);
  const d = normDim('indexSelect', dim, x.ndim);
  const out = wrap(native.indexSelect(x.handle, d, index.handle));
  return record(out, 'indexSelect', [x], (g) => {
    // Scatter-add rows back: the index broadcast along every other dim of the gradient.
    const shape = g.shape.map((_, i) => (i === d ? index.size : 1));
    const idx = wrap(native.expand(native.reshape(index.handle, shape), [...g.shape]));
    const zeros = wrap(native.full([...x.shape], g.dtype, g.device, 0));
    return [wrap(native.scatterAdd(zeros.handle, d, idx.handle, g.handle))];
  });
}

export function gather(x: Tensor, dim: number, index: Tensor): Tensor {
  checkTensor('gather', 'input', x);
  checkIndex('gather', index);
  const d = normDim('gather', dim, x.ndim);
  const out = wrap(native.gather(x.handle, d, index.handle));
  return record(out, 'gather', [x], (g) => {
    const zeros = wrap(native.full([...x.shape], g.dtype, g.device, 0));
    return [wrap(native.scatterAdd(zeros.handle, d, index.handle, g.handle))];
  });
}

export function scatterAdd(x: Tensor, dim: number, index: Tensor, src: Tensor): Tensor {
  checkTensor('scatterAdd', 'input', x);
  checkIndex('scatterAdd', index);
  checkTensor('scatterAdd', 'src', src);
  const d = normDim('scatterAdd', dim, x.ndim);
  const out = wrap(native.scatterAdd(x.handle, d, index.handle, src.handle));
  return record(out, 'scatterAdd', [x, src], (g) => [g, src.requiresGrad ? wrap(native.gather(g.handle, d, index.handle)) : null]);
}

/** One-hot encoding of integer class indices: shape [...index.shape, numClasses], i64. */
export function oneHot(index: Tensor, numClasses = -1): Tensor {
  checkIndex('oneHot', index);
  let n = numClasses;
  if (n === -1) n = index.size === 0 ? 0 : Number(wrap(native.reduce('max', index.handle, [], false)).itemSync()) + 1;
  if (!Number.isInteger(n) || n < 0) throw rangeError('oneHot', `numClasses must be a non-negative integer, got ${numClasses}`);
  const classes = arange(0, n, 1, { dtype: index.dtype, device: index.device });
  return eq(index.unsqueeze(-1), classes).to('i64');
}
