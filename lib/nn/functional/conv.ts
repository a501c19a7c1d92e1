/**
 * conv2d and convTranspose2d on the native im2col kernels. Three primitives (forward, input
 * gradient, weight gradient) give both ops: a transposed convolution is the input gradient of a
 * convolution, so its gradients are a convolution and a weight gradient.
 */
import { native } from '../../native';
import type { Tensor } from '../../tensor';
import { record } from '../../dispatch/record';
import { castTo, shapeStr, wrap } from '../../ops/util';
import { checkOptions, flockError } from '../../errors';
import { checkInt } from '../../validate';
import { check4d, checkFloat, pair, tensorArg, type Pair } from './args';
import { autocastArgs } from '../../dispatch/autocast';

export interface Conv2dOptions {
  stride?: Pair;
  padding?: Pair;
  dilation?: Pair;
  groups?: number;
}

export interface ConvTranspose2dOptions extends Conv2dOptions {
  outputPadding?: Pair;
}

const CONV_KEYS = ['stride', 'padding', 'dilation', 'groups'] as const;
const CONV_T_KEYS = [...CONV_KEYS, 'outputPadding'] as const;

/** The checked geometry of a convolution's options. */
export function convGeometry(op: string, o: Conv2dOptions) {
  return {
    stride: pair(op, 'stride', o.stride ?? 1, 1),
    padding: pair(op, 'padding', o.padding ?? 0, 0),
    dilation: pair(op, 'dilation', o.dilation ?? 1, 1),
    groups: checkInt(op, 'groups', o.groups ?? 1, 1),
  };
}

/** Input, weight (and bias) of a convolution: live float tensors of matching dtype, 4-D. */
function checkOperands(op: string, x: unknown, weight: unknown, bias: unknown): [Tensor, Tensor, Tensor | null] {
  const xt = tensorArg(op, 'input', x);
  const wt = tensorArg(op, 'weight', weight);
  const bt = bias === undefined || bias === null ? null : tensorArg(op, 'bias', bias);
  check4d(op, xt);
  checkFloat(op, xt);
  if (wt.ndim !== 4) throw flockError('ERR_SHAPE', op, `weight must be 4-D, got ${shapeStr(wt.shape)}`);
  if (wt.dtype !== xt.dtype) throw flockError('ERR_DTYPE', op, `weight is ${wt.dtype}, input is ${xt.dtype}`);
  if (bt && !(bt.dtype === 'f32' || bt.dtype === 'f64' || bt.dtype === 'bf16' || bt.dtype === 'f16'))
    throw flockError('ERR_DTYPE', op, `bias must be a floating tensor, got ${bt.dtype}`);
  return [xt, wt, bt];
}

function checkBias(bias: Tensor, channels: number, op: string): void {
  if (bias.ndim !== 1 || bias.shape[0] !== channels)
    throw flockError('ERR_SHAPE', op, `bias must be [${channels}], got ${shapeStr(bias.shape)}`);
}

function addBias(y: Tensor, bias: Tensor | null | undefined, channels: number): Tensor {
  if (!bias) return y;
  return y.add(castTo(bias, y.dtype).reshape([1, channels, 1, 1]));
}

/** 2-D convolution of x [N, C, H, W] with weight [OC, C/groups, KH, KW] (+ bias [OC]). */
export function conv2d(x: Tensor, weight: Tensor, bias?: Tensor | null, options: Conv2dOptions = {}): Tensor {
  [x, weight, bias] = checkOperands('conv2d', ...autocastArgs('nn.functional.conv2d', x, weight, bias));
  const g = convGeometry('conv2d', checkOptions('conv2d', options, CONV_KEYS));
  if (x.shape[1] !== weight.shape[1] * g.groups || weight.shape[0] % g.groups !== 0)
    throw flockError(
      'ERR_SHAPE',
      'conv2d',
      `input ${shapeStr(x.shape)} has ${x.shape[1]} channels; weight ${shapeStr(weight.shape)} with groups ${g.groups} expects ${weight.shape[1] * g.groups}` +
        (weight.shape[0] % g.groups ? ` and ${weight.shape[0]} output channels are not divisible by groups` : ''),
    );
  for (const d of [0, 1] as const) {
    const span = g.dilation[d] * (weight.shape[2 + d] - 1) + 1;
    if (x.shape[2 + d] + 2 * g.padding[d] < span)
      throw flockError(
        'ERR_SHAPE',
        'conv2d',
        `input ${shapeStr(x.shape)} padded by ${shapeStr(g.padding)} is smaller than the kernel ${shapeStr(weight.shape.slice(2))} (dilation ${shapeStr(g.dilation)})`,
      );
  }
  const args = [g.stride, g.padding, g.dilation, g.groups] as const;
  if (bias) checkBias(bias, weight.shape[0], 'conv2d');
  const xx = x,
    ww = weight;
  // The bias is added inside the kernel, saving a pass over the (largest) activation tensor.
  const y = wrap(native.conv2d(x.handle, weight.handle, ...args, bias ? castTo(bias, x.dtype).handle : null));
  const inputs = bias ? [x, weight, bias] : [x, weight];
  const b = bias;
  return record(
    y,
    'conv2d',
    inputs,
    (gy) => [
      xx.requiresGrad ? wrap(native.conv2dBackwardInput(gy.handle, ww.handle, [...xx.shape], ...args)) : null,
      ww.requiresGrad ? wrap(native.conv2dBackwardWeight(xx.handle, gy.handle, [...ww.shape], ...args)) : null,
      b?.requiresGrad ? gy.sum([0, 2, 3]) : null,
    ],
    { savesOutput: false },
  );
}

/** Transposed 2-D convolution of x [N, C, H, W] with weight [C, OC/groups, KH, KW] (+ bias [OC]). */
export function convTranspose2d(x: Tensor, weight: Tensor, bias?: Tensor | null, options: ConvTranspose2dOptions = {}): Tensor {
  const opName = 'convTranspose2d';
  [x, weight, bias] = checkOperands(opName, ...autocastArgs('nn.functional.convTranspose2d', x, weight, bias));
  const o = checkOptions(opName, options, CONV_T_KEYS);
  const g = convGeometry(opName, o);
  const op = pair(opName, 'outputPadding', o.outputPadding ?? 0, 0);
  if (op[0] >= Math.max(g.stride[0], g.dilation[0]) || op[1] >= Math.max(g.stride[1], g.dilation[1]))
    throw flockError(
      'ERR_RANGE',
      opName,
      `outputPadding ${shapeStr(op)} must be smaller than stride ${shapeStr(g.stride)} or dilation ${shapeStr(g.dilation)}`,
    );
  if (x.shape[1] !== weight.shape[0] || weight.shape[0] % g.groups !== 0)
    throw flockError(
      'ERR_SHAPE',
      opName,
      `input has ${x.shape[1]} channels, weight ${shapeStr(weight.shape)} expects ${weight.shape[0]}` +
        (weight.shape[0] % g.groups ? ` divisible by groups ${g.groups}` : ''),
    );
  const oc = weight.shape[1] * g.groups;
  if (bias) checkBias(bias, oc, opName);
  const size = (d: 0 | 1) => (x.shape[2 + d] - 1) * g.stride[d] - 2 * g.padding[d] + g.dilation[d] * (weight.shape[2 + d] - 1) + op[d] + 1;
  const outShape = [x.shape[0], oc, size(0), size(1)];
  if (outShape[2] < 1 || outShape[3] < 1)
    throw flockError('ERR_SHAPE', opName, `output size ${shapeStr(outShape)} is empty for input ${shapeStr(x.shape)}`);
  const args = [g.stride, g.padding, g.dilation, g.groups] as const;
  const xx = x,
    ww = weight;
  const y = wrap(native.conv2dBackwardInput(x.handle, weight.handle, outShape, ...args));
  const out = record(
    y,
    opName,
    [x, weight],
    (gy) => [
      xx.requiresGrad ? wrap(native.conv2d(gy.handle, ww.handle, ...args)) : null,
      ww.requiresGrad ? wrap(native.conv2dBackwardWeight(gy.handle, xx.handle, [...ww.shape], ...args)) : null,
    ],
    { savesOutput: false },
  );
  return addBias(out, bias, oc);
}
