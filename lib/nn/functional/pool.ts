/** 2-D pooling (max with argmax indices, average, adaptive average) on the native kernels. */
import { native } from '../../native';
import type { Tensor } from '../../tensor';
import { record } from '../../autograd/node';
import { checkTensor, wrap } from '../../ops/util';
import { check4d, checkFloat, pair, type Pair } from './args';

export interface Pool2dOptions {
  stride?: Pair | null;
  padding?: Pair;
  dilation?: Pair;
  ceilMode?: boolean;
}

function prepare(op: string, x: Tensor, kernelSize: Pair, o: Pool2dOptions & { countIncludePad?: boolean }) {
  checkTensor(op, 'input', x);
  check4d(op, x);
  checkFloat(op, x);
  const k = pair(op, 'kernelSize', kernelSize, 1);
  return [k, pair(op, 'stride', o.stride ?? k, 1), pair(op, 'padding', o.padding ?? 0, 0), pair(op, 'dilation', o.dilation ?? 1, 1),
    o.ceilMode ?? false, o.countIncludePad ?? true] as const;
}

/** Max pooling; the stride defaults to the kernel size, as in PyTorch. */
export function maxPool2d(x: Tensor, kernelSize: Pair, options: Pool2dOptions = {}): Tensor {
  return maxPool2dWithIndices(x, kernelSize, options)[0];
}

/** Max pooling that also returns the flat (H·W) argmax of every window. */
export function maxPool2dWithIndices(x: Tensor, kernelSize: Pair, options: Pool2dOptions = {}): [Tensor, Tensor] {
  const a = prepare('maxPool2d', x, kernelSize, options);
  const [yh, ih] = native.maxPool2d(x.handle, ...a);
  const idx = wrap(ih);
  const y = record(wrap(yh), 'maxPool2d', [x], (g) => [wrap(native.maxPool2dBackward(g.handle, idx.handle, [...x.shape], ...a))]);
  return [y, idx];
}

export function avgPool2d(x: Tensor, kernelSize: Pair, options: Pool2dOptions & { countIncludePad?: boolean } = {}): Tensor {
  const a = prepare('avgPool2d', x, kernelSize, options);
  const y = wrap(native.avgPool2d(x.handle, ...a));
  return record(y, 'avgPool2d', [x], (g) => [wrap(native.avgPool2dBackward(g.handle, [...x.shape], ...a))]);
}

/** Average pooling to a fixed output size with PyTorch's bin boundaries. */
export function adaptiveAvgPool2d(x: Tensor, outputSize: Pair): Tensor {
  checkTensor('adaptiveAvgPool2d', 'input', x);
  check4d('adaptiveAvgPool2d', x);
  checkFloat('adaptiveAvgPool2d', x);
  const size = pair('adaptiveAvgPool2d', 'outputSize', outputSize, 1);
  const y = wrap(native.adaptiveAvgPool2d(x.handle, size));
  return record(y, 'adaptiveAvgPool2d', [x], (g) => [wrap(native.adaptiveAvgPool2dBackward(g.handle, [...x.shape]))]);
}
