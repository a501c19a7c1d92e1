/**
 * Normalisation. Layer and group norm run the native row kernel (one pass for the statistics, one
 * for the output; mean and 1/std kept for backward); batch norm, whose statistics run across the
 * batch, is a composition of reductions and element-wise ops. Variances are biased, as PyTorch's.
 */
import { native } from '../../native';
import type { Tensor } from '../../tensor';
import { record } from '../../autograd/node';
import { noGrad } from '../../autograd/grad_mode';
import { copy_ } from '../../ops/elementwise';
import { checkTensor, rangeError, shapeStr, wrap } from '../../ops/util';

/** Reshapes a per-channel vector [C] to broadcast over dim 1 of an n-D input. */
function perChannel(v: Tensor, ndim: number): Tensor {
  return v.reshape([1, v.shape[0], ...Array(Math.max(0, ndim - 2)).fill(1)]);
}

/** Each row of `x` [rows, d] to zero mean and unit variance; composed ops for dtypes other than f32/f64. */
function normalizeRows(x: Tensor, eps: number): Tensor {
  if (x.dtype !== 'f32' && x.dtype !== 'f64') {
    return x.sub(x.mean(1, true)).mul(x.var(1, { correction: 0, keepdim: true }).add(eps).rsqrt());
  }
  const [y, mean, rstd] = native.rowNorm(x.handle, eps).map(wrap);
  return record(y, 'rowNorm', [x], (g) => [wrap(native.rowNormBackward(x.handle, mean.handle, rstd.handle, g.handle))]);
}

export interface BatchNormOptions {
  weight?: Tensor | null;
  bias?: Tensor | null;
  training?: boolean;
  momentum?: number;
  eps?: number;
}

/**
 * Batch normalisation over every dim but 1. In training the batch statistics normalise and the
 * running ones are updated in place with the unbiased variance; otherwise the running ones are used.
 */
export function batchNorm(x: Tensor, runningMean: Tensor | null, runningVar: Tensor | null, options: BatchNormOptions = {}): Tensor {
  checkTensor('batchNorm', 'input', x);
  if (x.ndim < 2) throw rangeError('batchNorm', `expected an input of at least 2 dims [N, C, …], got ${shapeStr(x.shape)}`);
  const training = options.training ?? false;
  const eps = options.eps ?? 1e-5;
  const momentum = options.momentum ?? 0.1;
  const c = x.shape[1];
  for (const [name, t] of [['runningMean', runningMean], ['runningVar', runningVar], ['weight', options.weight], ['bias', options.bias]] as const)
    if (t && (t.ndim !== 1 || t.shape[0] !== c)) throw rangeError('batchNorm', `${name} must be [${c}], got ${shapeStr(t.shape)}`);
  const dims = x.shape.map((_, i) => i).filter((i) => i !== 1);
  let mean: Tensor, variance: Tensor;
  if (training || !runningMean || !runningVar) {
    const n = x.numel() / c;
    if (training && n <= 1) throw rangeError('batchNorm', `expected more than 1 value per channel when training, got input ${shapeStr(x.shape)}`);
    mean = x.mean(dims, true);
    variance = x.var(dims, { correction: 0, keepdim: true });
    if (training && runningMean && runningVar)
      noGrad(() => {
        copy_(runningMean, runningMean.mul(1 - momentum).add(mean.reshape([c]).mul(momentum)));
        copy_(runningVar, runningVar.mul(1 - momentum).add(variance.reshape([c]).mul((momentum * n) / Math.max(n - 1, 1))));
      });
  } else {
    mean = perChannel(runningMean, x.ndim);
    variance = perChannel(runningVar, x.ndim);
  }
  let y = x.sub(mean).mul(variance.add(eps).rsqrt());
  if (options.weight) y = y.mul(perChannel(options.weight, x.ndim));
  if (options.bias) y = y.add(perChannel(options.bias, x.ndim));
  return y;
}

/** Normalises over the trailing `normalizedShape` dims, then applies the elementwise affine. */
export function layerNorm(x: Tensor, normalizedShape: number[], weight?: Tensor | null, bias?: Tensor | null, eps = 1e-5): Tensor {
  checkTensor('layerNorm', 'input', x);
  const k = normalizedShape.length;
  const tail = x.shape.slice(x.ndim - k);
  if (k === 0 || k > x.ndim || tail.some((s, i) => s !== normalizedShape[i]))
    throw rangeError('layerNorm', `normalizedShape ${shapeStr(normalizedShape)} does not match the trailing dims of input ${shapeStr(x.shape)}`);
  const d = normalizedShape.reduce((a, b) => a * b, 1);
  let y = normalizeRows(x.reshape([x.numel() / Math.max(d, 1), d]), eps).reshape([...x.shape]);
  if (weight) y = y.mul(weight);
  if (bias) y = y.add(bias);
  return y;
}

/** Normalises channels in `numGroups` groups per sample; affine per channel. */
export function groupNorm(x: Tensor, numGroups: number, weight?: Tensor | null, bias?: Tensor | null, eps = 1e-5): Tensor {
  checkTensor('groupNorm', 'input', x);
  if (x.ndim < 2) throw rangeError('groupNorm', `expected an input of at least 2 dims [N, C, …], got ${shapeStr(x.shape)}`);
  const c = x.shape[1];
  if (!Number.isInteger(numGroups) || numGroups < 1 || c % numGroups !== 0)
    throw rangeError('groupNorm', `number of channels ${c} must be divisible by numGroups ${numGroups}`);
  const rows = x.shape[0] * numGroups;
  let y = normalizeRows(x.reshape([rows, x.numel() / Math.max(rows, 1)]), eps).reshape([...x.shape]);
  if (weight) y = y.mul(perChannel(weight, x.ndim));
  if (bias) y = y.add(perChannel(bias, x.ndim));
  return y;
}
