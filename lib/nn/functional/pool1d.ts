/**
 * 1-d pooling (max with argmax indices, average, adaptive average) on the 2-d pooling kernels: an
 * [N, C, L] input is an [N, C, 1, L] image pooled by a [1, k] window, which takes the same elements.
 */
import type { Tensor } from '../../tensor';
import { shapeStr } from '../../ops/util';
import { checkOptions, flockError } from '../../errors';
import { checkBool } from '../../validate';
import { checkFloat, tensorArg } from './args';
import { type Single, single } from './conv1d';
import { AVG_POOL_KEYS, MAX_POOL_KEYS, adaptiveAvgPool2dWith, avgPool2dWith, maxPool2dWith, poolGeometry } from './pool';

export interface Pool1dOptions {
  /** Default: the kernel size (null means the same, as PyTorch's None). */
  stride?: Single | null;
  padding?: Single;
  /** Max pooling only (PyTorch's avg_pool1d has no dilation). */
  dilation?: Single;
  ceilMode?: boolean;
}

export interface AvgPool1dOptions extends Omit<Pool1dOptions, 'dilation'> {
  countIncludePad?: boolean;
}

/** @internal The checked window of a 1-d pooling op, as its 2-d geometry over [1, L]. */
export type Pool1dGeometry = ReturnType<typeof poolGeometry>;

/** @internal Checks a 1-d pooling op's arguments (errors in 1-d terms) and gives its 2-d geometry. */
export function pool1dGeometry(op: string, kernelSize: unknown, options: unknown, keys: readonly string[]): Pool1dGeometry {
  const o = checkOptions(op, options as (Pool1dOptions & AvgPool1dOptions) | undefined, keys);
  const k = single(op, 'kernelSize', kernelSize, 1);
  const stride = single(op, 'stride', o.stride ?? k, 1);
  const padding = single(op, 'padding', o.padding ?? 0, 0);
  const dilation = single(op, 'dilation', o.dilation ?? 1, 1);
  const span = (k - 1) * dilation + 1;
  if (padding > span / 2) throw flockError('ERR_RANGE', op, `padding ${padding} must be at most half the window ${span}`);
  const ceilMode = checkBool(op, 'ceilMode', o.ceilMode ?? false);
  const countIncludePad = checkBool(op, 'countIncludePad', o.countIncludePad ?? true);
  const opts = { stride: [1, stride], padding: [0, padding], ceilMode, ...(keys.includes('dilation') ? { dilation: [1, dilation] } : {}) };
  return poolGeometry(op, [1, k], keys.includes('countIncludePad') ? { ...opts, countIncludePad } : opts, keys);
}

/** A 3-D floating input at least as long as the padded window, as the [N, C, 1, L] image the kernels take. */
function input2d(op: string, x: unknown, g: Pool1dGeometry | null): Tensor {
  const t = tensorArg(op, 'input', x);
  if (t.ndim !== 3) throw flockError('ERR_SHAPE', op, `expected a 3-D input [N, C, L], got ${shapeStr(t.shape)}`);
  checkFloat(op, t);
  if (g) {
    const [k, , p, d] = g;
    if (t.shape[2] + 2 * p[1] < d[1] * (k[1] - 1) + 1)
      throw flockError(
        'ERR_SHAPE',
        op,
        `input ${shapeStr(t.shape)} padded by ${p[1]} is smaller than the window ${k[1]} (dilation ${d[1]})`,
      );
  }
  return t.unsqueeze(2);
}

/** Max pooling over the last dim of [N, C, L]; the stride defaults to the kernel size, as torch's max_pool1d. */
export function maxPool1d(x: Tensor, kernelSize: Single, options: Pool1dOptions = {}): Tensor {
  return maxPool1dWith('maxPool1d', x, pool1dGeometry('maxPool1d', kernelSize, options, MAX_POOL_KEYS))[0];
}

/** Max pooling that also returns the argmax (an index into L, i64) of every window, as return_indices=True. */
export function maxPool1dWithIndices(x: Tensor, kernelSize: Single, options: Pool1dOptions = {}): [Tensor, Tensor] {
  return maxPool1dWith('maxPool1dWithIndices', x, pool1dGeometry('maxPool1dWithIndices', kernelSize, options, MAX_POOL_KEYS));
}

/** @internal max pooling with an already checked geometry (the layers check theirs once). */
export function maxPool1dWith(op: string, x: Tensor, g: Pool1dGeometry): [Tensor, Tensor] {
  // On a [1, L] image the flat h·L + l index of the argmax is l.
  const [y, idx] = maxPool2dWith(op, input2d(op, x, g), g);
  return [y.squeeze(2), idx.squeeze(2)];
}

/** Average pooling over the last dim of [N, C, L], as torch's avg_pool1d. */
export function avgPool1d(x: Tensor, kernelSize: Single, options: AvgPool1dOptions = {}): Tensor {
  return avgPool1dWith('avgPool1d', x, pool1dGeometry('avgPool1d', kernelSize, options, AVG_POOL_KEYS));
}

/** @internal average pooling with an already checked geometry. */
export function avgPool1dWith(op: string, x: Tensor, g: Pool1dGeometry): Tensor {
  return avgPool2dWith(op, input2d(op, x, g), g).squeeze(2);
}

/** Average pooling of [N, C, L] to `outputSize` bins with PyTorch's bin boundaries, as adaptive_avg_pool1d. */
export function adaptiveAvgPool1d(x: Tensor, outputSize: Single): Tensor {
  return adaptiveAvgPool1dWith('adaptiveAvgPool1d', x, single('adaptiveAvgPool1d', 'outputSize', outputSize, 1));
}

/** @internal adaptive average pooling with an already checked output size. */
export function adaptiveAvgPool1dWith(op: string, x: Tensor, size: number): Tensor {
  return adaptiveAvgPool2dWith(op, input2d(op, x, null), [1, size]).squeeze(2);
}
