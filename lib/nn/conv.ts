/** Conv2d and ConvTranspose2d layers (weights and bias initialised as PyTorch's). */
import type { Tensor } from '../tensor';
import { zeros } from '../ops/creation';
import type { DType } from '../dtype';
import { Module } from './module';
import { Parameter } from './parameter';
import { defaultLayerInit_ } from './init';
import { conv2d, convTranspose2d } from './functional/conv';
import { pair, type Pair } from './functional/args';
import { errorOf } from '../errors';

export interface Conv2dLayerOptions {
  stride?: Pair;
  padding?: Pair;
  dilation?: Pair;
  groups?: number;
  bias?: boolean;
  dtype?: DType;
  device?: string;
}

function checkChannels(op: string, inC: number, outC: number, groups: number): void {
  if (!Number.isInteger(groups) || groups < 1 || inC % groups || outC % groups)
    throw errorOf('ERR_RANGE', `${op}: inChannels ${inC} and outChannels ${outC} must be divisible by groups ${groups}`);
}

export class Conv2d extends Module {
  weight: Parameter;
  bias: Parameter | null;
  readonly kernelSize: [number, number];

  constructor(readonly inChannels: number, readonly outChannels: number, kernelSize: Pair, readonly options: Conv2dLayerOptions = {}) {
    super();
    const groups = options.groups ?? 1;
    checkChannels('Conv2d', inChannels, outChannels, groups);
    this.kernelSize = pair('Conv2d', 'kernelSize', kernelSize, 1);
    const o = { dtype: options.dtype ?? 'f32', device: options.device };
    this.weight = new Parameter(zeros([outChannels, inChannels / groups, ...this.kernelSize], o));
    this.bias = options.bias === false ? null : new Parameter(zeros([outChannels], o));
    defaultLayerInit_(this.weight, this.bias);
  }

  forward(x: Tensor): Tensor {
    return conv2d(x, this.weight, this.bias, this.options);
  }

  override extraRepr(): string {
    return `${this.inChannels}, ${this.outChannels}, kernelSize=[${this.kernelSize}]`;
  }
}

export class ConvTranspose2d extends Module {
  weight: Parameter;
  bias: Parameter | null;
  readonly kernelSize: [number, number];

  constructor(readonly inChannels: number, readonly outChannels: number, kernelSize: Pair, readonly options: Conv2dLayerOptions & { outputPadding?: Pair } = {}) {
    super();
    const groups = options.groups ?? 1;
    checkChannels('ConvTranspose2d', inChannels, outChannels, groups);
    this.kernelSize = pair('ConvTranspose2d', 'kernelSize', kernelSize, 1);
    const o = { dtype: options.dtype ?? 'f32', device: options.device };
    this.weight = new Parameter(zeros([inChannels, outChannels / groups, ...this.kernelSize], o));
    this.bias = options.bias === false ? null : new Parameter(zeros([outChannels], o));
    // PyTorch computes the transposed layer's fan-in from weight dim 1 as well.
    defaultLayerInit_(this.weight, this.bias);
  }

  forward(x: Tensor): Tensor {
    return convTranspose2d(x, this.weight, this.bias, this.options);
  }

  override extraRepr(): string {
    return `${this.inChannels}, ${this.outChannels}, kernelSize=[${this.kernelSize}]`;
  }
}
