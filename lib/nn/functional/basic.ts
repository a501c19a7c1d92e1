/** linear, dropout and embedding: the small functional ops of the common layers. */
import type { Tensor } from '../../tensor';
import { matmulT } from '../../ops/linalg';
import { bernoulli } from '../../ops/creation';
import { checkTensor, rangeError, shapeStr, typeError } from '../../ops/util';

/** x · weightᵀ + bias, with weight [out, in]; the kernel reads the transpose in place. */
export function linear(x: Tensor, weight: Tensor, bias?: Tensor | null): Tensor {
  checkTensor('linear', 'input', x);
  checkTensor('linear', 'weight', weight);
  if (weight.ndim !== 2) throw rangeError('linear', `weight must be 2-D [out, in], got ${shapeStr(weight.shape)}`);
  if (x.ndim < 1 || x.shape[x.ndim - 1] !== weight.shape[1])
    throw rangeError('linear', `input ${shapeStr(x.shape)} has ${x.shape[x.ndim - 1]} features, weight ${shapeStr(weight.shape)} expects ${weight.shape[1]}`);
  const lead = x.shape.slice(0, -1);
  const x2 = x.ndim === 2 ? x : x.reshape([-1, weight.shape[1]]);
  let y = matmulT(x2, weight, false, true);
  if (bias) y = y.add(bias);
  return x.ndim === 2 ? y : y.reshape([...lead, weight.shape[0]]);
}

/**
 * Zeroes each element with probability p and scales the rest by 1/(1−p) while training; the mask
 * comes from the global Philox generator, so fl.manualSeed makes it reproducible.
 */
export function dropout(x: Tensor, p = 0.5, training = true): Tensor {
  checkTensor('dropout', 'input', x);
  if (typeof p !== 'number' || !(p >= 0 && p <= 1)) throw rangeError('dropout', `p must be in [0, 1], got ${p}`, 'ERR_ARG');
  if (!training || p === 0) return x;
  if (p === 1) return x.mul(0);
  const mask = bernoulli([...x.shape], 1 - p, { dtype: x.dtype, device: x.device });
  return x.mul(mask.mul(1 / (1 - p)));
}

/** Rows of `weight` [num, dim] picked by integer `indices` of any shape: [...indices.shape, dim]. */
export function embedding(indices: Tensor, weight: Tensor): Tensor {
  checkTensor('embedding', 'indices', indices);
  checkTensor('embedding', 'weight', weight);
  if (indices.dtype !== 'i64' && indices.dtype !== 'i32') throw typeError('embedding', `indices must be i64 or i32, got ${indices.dtype}`, 'ERR_DTYPE');
  if (weight.ndim !== 2) throw rangeError('embedding', `weight must be 2-D [num, dim], got ${shapeStr(weight.shape)}`);
  const rows = weight.indexSelect(0, indices.reshape([-1]));
  return rows.reshape([...indices.shape, weight.shape[1]]);
}
