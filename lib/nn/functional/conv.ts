/**
 * conv2d and convTranspose2d on the native im2col kernels. Three primitives (forward, input
 * gradient, weight gradient) give both ops: a transposed convolution is the input gradient of a
 * convolution, so its gradients are a convolution and a weight gradient.
 */
import { native } from '../../native';
import type { Tensor } from '../../tensor';
import { record } from '../../autograd/node';
import { castTo, checkTensor, rangeError, shapeStr, wrap } from '../../ops/util';
import { check4d, checkFloat, pair, type Pair } from './args';

export interface Conv2dOptions {
  stride?: Pair;
  padding?: Pair;
  dilation?: Pair;
  groups?: number;
}

function geometry(op: string, o: Conv2dOptions) {
  return {
    stride: pair(op, 'stride', o.stride ?? 1, 1),
    padding: pair(op, 'padding', o.padding ?? 0, 0),
    dilation: pair(op, 'dilation', o.dilation ?? 1, 1),
    groups: o.groups ?? 1,
  };
}

function checkBias(bias: Tensor, channels: number, op: string): void {
  checkTensor(op, 'bias', bias);
  if (bias.ndim !== 1 || bias.shape[0] !== channels) throw rangeError(op, `bias must be [${channels}], got ${shapeStr(bias.shape)}`);
}

function addBias(y: Tensor, bias: Tensor | null | undefined, channels: number, op: string): Tensor {
  if (!bias) return y;
  checkBias(bias, channels, op);
  return y.add(bias.reshape([1, channels, 1, 1]));
}

/** 2-D convolution of x [N, C, H, W] with weight [OC, C/groups, KH, KW] (+ bias [OC]). */
export function conv2d(x: Tensor, weight: Tensor, bias?: Tensor | null, options: Conv2dOptions = {}): Tensor {
  checkTensor('conv2d', 'input', x);
  checkTensor('conv2d', 'weight', weight);
  check4d('conv2d', x);
  checkFloat('conv2d', x);
  const g = geometry('conv2d', options);
  const args = [g.stride, g.padding, g.dilation, g.groups] as const;
  if (bias) checkBias(bias, weight.shape[0], 'conv2d');
  // The bias is added inside the kernel, saving a pass over the (largest) activation tensor.
  const y = wrap(native.conv2d(x.handle, weight.handle, ...args, bias ? castTo(bias, x.dtype).handle : null));
  const inputs = bias ? [x, weight, bias] : [x, weight];
  return record(y, 'conv2d', inputs, (gy) => [
    x.requiresGrad ? wrap(native.conv2dBackwardInput(gy.handle, weight.handle, [...x.shape], ...args)) : null,
    weight.requiresGrad ? wrap(native.conv2dBackwardWeight(x.handle, gy.handle, [...weight.shape], ...args)) : null,
    bias?.requiresGrad ? gy.sum([0, 2, 3]) : null,
  ]);
}

export interface ConvTranspose2dOptions extends Conv2dOptions {
  outputPadding?: Pair;
}

/** Transposed 2-D convolution of x [N, C, H, W] with weight [C, OC/groups, KH, KW] (+ bias [OC]). */
export function convTranspose2d(x: Tensor, weight: Tensor, bias?: Tensor | null, options: ConvTranspose2dOptions = {}): Tensor {
  checkTensor('convTranspose2d', 'input', x);
  checkTensor('convTranspose2d', 'weight', weight);
  check4d('convTranspose2d', x);
  checkFloat('convTranspose2d', x);
  if (weight.ndim !== 4) throw rangeError('convTranspose2d', `weight must be 4-D [C, OC/groups, KH, KW], got ${shapeStr(weight.shape)}`);
  const g = geometry('convTranspose2d', options);
  const op = pair('convTranspose2d', 'outputPadding', options.outputPadding ?? 0, 0);
  if (op[0] >= Math.max(g.stride[0], g.dilation[0]) || op[1] >= Math.max(g.stride[1], g.dilation[1]))
    throw rangeError('convTranspose2d', 'outputPadding must be smaller than stride or dilation', 'ERR_RANGE');
  if (x.shape[1] !== weight.shape[0]) throw rangeError('convTranspose2d', `input has ${x.shape[1]} channels, weight ${shapeStr(weight.shape)} expects ${weight.shape[0]}`);
  const oc = weight.shape[1] * g.groups;
  const size = (i: number, d: 0 | 1) => (x.shape[2 + d] - 1) * g.stride[d] - 2 * g.padding[d] + g.dilation[d] * (weight.shape[2 + d] - 1) + op[d] + 1;
  const outShape = [x.shape[0], oc, size(0, 0), size(0, 1)];
  if (outShape[2] < 1 || outShape[3] < 1) throw rangeError('convTranspose2d', `output size ${shapeStr(outShape)} is empty for input ${shapeStr(x.shape)}`);
  const args = [g.stride, g.padding, g.dilation, g.groups] as const;
  const y = wrap(native.conv2dBackwardInput(x.handle, weight.handle, outShape, ...args));
  const out = record(y, 'convTranspose2d', [x, weight], (gy) => [
    x.requiresGrad ? wrap(native.conv2d(gy.handle, weight.handle, ...args)) : null,
    weight.requiresGrad ? wrap(native.conv2dBackwardWeight(gy.handle, x.handle, [...weight.shape], ...args)) : null,
  ]);
  return addBias(out, bias, oc, 'convTranspose2d');
}
