/** Linear: y = x·Wᵀ + b with PyTorch's default initialisation. */
import type { Tensor } from '../tensor';
import { zeros } from '../ops/creation';
import type { DType } from '../dtype';
import { Module } from './module';
import { Parameter } from './parameter';
import { defaultLayerInit_ } from './init';
import { linear } from './functional/basic';
import { errorOf } from '../errors';

export interface LayerOptions {
  bias?: boolean;
  dtype?: DType;
  device?: string;
}

export class Linear extends Module {
  weight: Parameter;
  bias: Parameter | null;

  constructor(readonly inFeatures: number, readonly outFeatures: number, options: LayerOptions = {}) {
    super();
    if (!Number.isInteger(inFeatures) || !Number.isInteger(outFeatures) || inFeatures < 0 || outFeatures < 0)
      throw errorOf('ERR_RANGE', `Linear: feature counts must be non-negative integers, got ${inFeatures}, ${outFeatures}`);
    const o = { dtype: options.dtype ?? 'f32', device: options.device };
    this.weight = new Parameter(zeros([outFeatures, inFeatures], o));
    this.bias = options.bias === false ? null : new Parameter(zeros([outFeatures], o));
    defaultLayerInit_(this.weight, this.bias);
  }

  forward(x: Tensor): Tensor {
    return linear(x, this.weight, this.bias);
  }

  override extraRepr(): string {
    return `inFeatures=${this.inFeatures}, outFeatures=${this.outFeatures}, bias=${this.bias !== null}`;
  }
}
