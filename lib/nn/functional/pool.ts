/** 2-D pooling (max with argmax indices, average, adaptive average) on the native kernels. */
import { native } from '../../native';
import type { Tensor } from '../../tensor';
import { record } from '../../dispatch/record';
import { shapeStr, wrap } from '../../ops/util';
import { checkOptions, flockError } from '../../errors';
import { checkBool } from '../../validate';
import { check4d, checkFloat, pair, tensorArg, type Pair } from './args';

export interface Pool2dOptions {
  /** Default: the kernel size (null means the same, as PyTorch's None). */
  stride?: Pair | null;
  padding?: Pair;
  /** Max pooling only (PyTorch's avg_pool2d has no dilation). */
  dilation?: Pair;
  ceilMode?: boolean;
}

export interface AvgPool2dOptions extends Omit<Pool2dOptions, 'dilation'> {
  countIncludePad?: boolean;
}

export const MAX_POOL_KEYS = ['stride', 'padding', 'dilation', 'ceilMode'] as const;
export const AVG_POOL_KEYS = ['stride', 'padding', 'ceilMode', 'countIncludePad'] as const;

type Geometry = readonly [[number, number], [number, number], [number, number], [number, number], boolean, boolean];

/** The checked window of a pooling op: [kernel, stride, padding, dilation, ceilMode, countIncludePad]. */
export function poolGeometry(op: string, kernelSize: Pair, options: unknown, keys: readonly string[]): Geometry {
  const o = checkOptions(op, options as (Pool2dOptions & AvgPool2dOptions) | undefined, keys);
  const k = pair(op, 'kernelSize', kernelSize, 1);
  const padding = pair(op, 'padding', o.padding ?? 0, 0);
  const dilation = pair(op, 'dilation', o.dilation ?? 1, 1);
  // As PyTorch: the implicit padding may be at most half the (dilated) window.
  const span = [0, 1].map((i) => (k[i] - 1) * dilation[i] + 1);
  if (padding[0] > span[0] / 2 || padding[1] > span[1] / 2)
    throw flockError('ERR_RANGE', op, `padding ${shapeStr(padding)} must be at most half the window ${shapeStr(span)}`);
  return [
    k,
    pair(op, 'stride', o.stride ?? k, 1),
    padding,
    dilation,
    checkBool(op, 'ceilMode', o.ceilMode ?? false),
    checkBool(op, 'countIncludePad', o.countIncludePad ?? true),
  ] as const;
}

function input(op: string, x: unknown, g: Geometry): Tensor {
  const t = tensorArg(op, 'input', x);
  check4d(op, t);
  checkFloat(op, t);
  const [k, , p, d] = g;
  for (const i of [0, 1] as const)
    if (t.shape[2 + i] + 2 * p[i] < d[i] * (k[i] - 1) + 1)
      throw flockError(
        'ERR_SHAPE',
        op,
        `input ${shapeStr(t.shape)} padded by ${shapeStr(p)} is smaller than the window ${shapeStr(k)} (dilation ${shapeStr(d)})`,
      );
  return t;
}

/** Max pooling; the stride defaults to the kernel size, as in PyTorch. */
export function maxPool2d(x: Tensor, kernelSize: Pair, options: Pool2dOptions = {}): Tensor {
  return maxPool2dWith('maxPool2d', x, poolGeometry('maxPool2d', kernelSize, options, MAX_POOL_KEYS))[0];
}

/** Max pooling that also returns the flat (H·W) argmax of every window. */
export function maxPool2dWithIndices(x: Tensor, kernelSize: Pair, options: Pool2dOptions = {}): [Tensor, Tensor] {
  return maxPool2dWith('maxPool2dWithIndices', x, poolGeometry('maxPool2dWithIndices', kernelSize, options, MAX_POOL_KEYS));
}

/** @internal max pooling with an already checked geometry (the layers check theirs once). */
export function maxPool2dWith(op: string, x: Tensor, a: Geometry): [Tensor, Tensor] {
  const t = input(op, x, a);
  const [yh, ih] = native.maxPool2d(t.handle, ...a);
  const idx = wrap(ih);
  const y = record(wrap(yh), 'maxPool2d', [t], (g) => [wrap(native.maxPool2dBackward(g.handle, idx.handle, [...t.shape], ...a))], {
    savesOutput: false,
  });
  return [y, idx];
}

export function avgPool2d(x: Tensor, kernelSize: Pair, options: AvgPool2dOptions = {}): Tensor {
  return avgPool2dWith('avgPool2d', x, poolGeometry('avgPool2d', kernelSize, options, AVG_POOL_KEYS));
}

/** @internal average pooling with an already checked geometry. */
export function avgPool2dWith(op: string, x: Tensor, a: Geometry): Tensor {
  const t = input(op, x, a);
  const y = wrap(native.avgPool2d(t.handle, ...a));
  return record(y, 'avgPool2d', [t], (g) => [wrap(native.avgPool2dBackward(g.handle, [...t.shape], ...a))], { savesOutput: false });
}

/** Average pooling to a fixed output size with PyTorch's bin boundaries. */
export function adaptiveAvgPool2d(x: Tensor, outputSize: Pair): Tensor {
  const size = pair('adaptiveAvgPool2d', 'outputSize', outputSize, 1);
  return adaptiveAvgPool2dWith('adaptiveAvgPool2d', x, size);
}

/** @internal adaptive average pooling with an already checked output size. */
export function adaptiveAvgPool2dWith(op: string, x: Tensor, size: [number, number]): Tensor {
  const t = tensorArg(op, 'input', x);
  check4d(op, t);
  checkFloat(op, t);
  const y = wrap(native.adaptiveAvgPool2d(t.handle, size));
  return record(y, 'adaptiveAvgPool2d', [t], (g) => [wrap(native.adaptiveAvgPool2dBackward(g.handle, [...t.shape]))], {
    savesOutput: false,
  });
}
