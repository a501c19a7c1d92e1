/**
 * conv1d and convTranspose1d on the conv2d kernels: an [N, C, L] input is an [N, C, 1, L] image and
 * a [OC, C/groups, K] weight a [OC, C/groups, 1, K] one (free views), so the sums are the same ones,
 * and the gradients come from conv2d's.
 */
import type { Tensor } from '../../tensor';
import { shapeStr } from '../../ops/util';
import { argError, checkOptions, flockError } from '../../errors';
import { checkNumber, valueText } from '../../validate';
import { checkFloat, tensorArg } from './args';
import { conv2d, convTranspose2d } from './conv';

/** One size of a 1-d op: an integer, or a list of one integer as PyTorch accepts. */
export type Single = number | [number];

export interface Conv1dOptions {
  stride?: Single;
  padding?: Single;
  dilation?: Single;
  groups?: number;
}

export interface ConvTranspose1dOptions extends Conv1dOptions {
  outputPadding?: Single;
}

/** @internal `v` as one integer ≥ min. */
export function single(op: string, name: string, v: unknown, min: number): number {
  const n = Array.isArray(v) && v.length === 1 ? v[0] : v;
  if (typeof n !== 'number' || !Number.isInteger(n))
    throw argError(
      op,
      `${name} must be an integer or a list of one integer, got ${valueText(v)}${typeof v === 'string' ? ` (string padding such as '${v}' is not supported)` : ''}`,
    );
  return checkNumber(op, name, n, { min, integer: true });
}

/** Input and weight of a 1-d convolution: 3-D, floating, of one dtype. */
function operands(op: string, x: unknown, weight: unknown): [Tensor, Tensor] {
  const xt = tensorArg(op, 'input', x);
  const wt = tensorArg(op, 'weight', weight);
  if (xt.ndim !== 3) throw flockError('ERR_SHAPE', op, `expected a 3-D input [N, C, L], got ${shapeStr(xt.shape)}`);
  checkFloat(op, xt);
  if (wt.ndim !== 3) throw flockError('ERR_SHAPE', op, `weight must be 3-D, got ${shapeStr(wt.shape)}`);
  return [xt, wt];
}

/** A bias of `channels` (the 2-d op checks its dtype). */
function checkBias(op: string, bias: unknown, channels: number): void {
  if (bias === undefined || bias === null) return;
  const b = tensorArg(op, 'bias', bias);
  if (b.ndim !== 1 || b.shape[0] !== channels) throw flockError('ERR_SHAPE', op, `bias must be [${channels}], got ${shapeStr(b.shape)}`);
}

const to2d = (x: Tensor) => x.unsqueeze(2);
const from2d = (y: Tensor) => y.squeeze(2);

/** 1-D convolution of x [N, C, L] with weight [OC, C/groups, K] (+ bias [OC]), as torch.nn.functional.conv1d. */
export function conv1d(x: Tensor, weight: Tensor, bias?: Tensor | null, options: Conv1dOptions = {}): Tensor {
  const op = 'conv1d';
  const [xt, wt] = operands(op, x, weight);
  const o = checkOptions(op, options, ['stride', 'padding', 'dilation', 'groups']);
  const stride = single(op, 'stride', o.stride ?? 1, 1);
  const padding = single(op, 'padding', o.padding ?? 0, 0);
  const dilation = single(op, 'dilation', o.dilation ?? 1, 1);
  const groups = checkNumber(op, 'groups', o.groups ?? 1, { integer: true, min: 1 });
  if (xt.shape[1] !== wt.shape[1] * groups || wt.shape[0] % groups !== 0)
    throw flockError(
      'ERR_SHAPE',
      op,
      `input ${shapeStr(xt.shape)} has ${xt.shape[1]} channels; weight ${shapeStr(wt.shape)} with groups ${groups} expects ${wt.shape[1] * groups}` +
        (wt.shape[0] % groups ? ` and ${wt.shape[0]} output channels are not divisible by groups` : ''),
    );
  if (xt.shape[2] + 2 * padding < dilation * (wt.shape[2] - 1) + 1)
    throw flockError(
      'ERR_SHAPE',
      op,
      `input ${shapeStr(xt.shape)} padded by ${padding} is smaller than the kernel ${wt.shape[2]} (dilation ${dilation})`,
    );
  checkBias(op, bias, wt.shape[0]);
  const y = conv2d(to2d(xt), to2d(wt), bias, { stride: [1, stride], padding: [0, padding], dilation: [1, dilation], groups });
  return from2d(y);
}

/** Transposed 1-D convolution of x [N, C, L] with weight [C, OC/groups, K] (+ bias [OC]), as torch's conv_transpose1d. */
export function convTranspose1d(x: Tensor, weight: Tensor, bias?: Tensor | null, options: ConvTranspose1dOptions = {}): Tensor {
  const op = 'convTranspose1d';
  const [xt, wt] = operands(op, x, weight);
  const o = checkOptions(op, options, ['stride', 'padding', 'dilation', 'groups', 'outputPadding']);
  const stride = single(op, 'stride', o.stride ?? 1, 1);
  const padding = single(op, 'padding', o.padding ?? 0, 0);
  const dilation = single(op, 'dilation', o.dilation ?? 1, 1);
  const outputPadding = single(op, 'outputPadding', o.outputPadding ?? 0, 0);
  const groups = checkNumber(op, 'groups', o.groups ?? 1, { integer: true, min: 1 });
  if (outputPadding >= Math.max(stride, dilation))
    throw flockError('ERR_RANGE', op, `outputPadding ${outputPadding} must be smaller than stride ${stride} or dilation ${dilation}`);
  if (xt.shape[1] !== wt.shape[0] || wt.shape[0] % groups !== 0)
    throw flockError(
      'ERR_SHAPE',
      op,
      `input ${shapeStr(xt.shape)} has ${xt.shape[1]} channels, weight ${shapeStr(wt.shape)} expects ${wt.shape[0]}` +
        (wt.shape[0] % groups ? ` divisible by groups ${groups}` : ''),
    );
  const length = (xt.shape[2] - 1) * stride - 2 * padding + dilation * (wt.shape[2] - 1) + outputPadding + 1;
  if (length < 1) throw flockError('ERR_SHAPE', op, `output length ${length} is empty for input ${shapeStr(xt.shape)}`);
  checkBias(op, bias, wt.shape[1] * groups);
  const y = convTranspose2d(to2d(xt), to2d(wt), bias, {
    stride: [1, stride],
    padding: [0, padding],
    dilation: [1, dilation],
    groups,
    outputPadding: [0, outputPadding],
  });
  return from2d(y);
}
