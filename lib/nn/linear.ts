/** Linear: y = x·Wᵀ + b with PyTorch's default initialisation. */
import type { Tensor } from '../tensor';
import { zeros } from '../ops/creation';
import type { DType } from '../dtype';
import { Module, pyRepr } from './module';
import { type Parameter, ownParameter } from './parameter';
import { defaultLayerInit_ } from './init';
import { linear } from './functional/basic';
import { tensorOptions } from './functional/args';
import { checkOptions } from '../errors';
import { checkBool, checkInt } from '../validate';

export interface LayerOptions {
  bias?: boolean;
  dtype?: DType;
  device?: string;
}

export class Linear extends Module {
  weight: Parameter;
  bias: Parameter | null;

  constructor(
    readonly inFeatures: number,
    readonly outFeatures: number,
    options: LayerOptions = {},
  ) {
    super();
    const o = checkOptions('Linear', options, ['bias', 'dtype', 'device']);
    checkInt('Linear', 'inFeatures', inFeatures);
    checkInt('Linear', 'outFeatures', outFeatures);
    const hasBias = checkBool('Linear', 'bias', o.bias ?? true);
    const t = tensorOptions('Linear', o);
    this.weight = ownParameter(zeros([outFeatures, inFeatures], t));
    this.bias = hasBias ? ownParameter(zeros([outFeatures], t)) : null;
    defaultLayerInit_(this.weight, this.bias);
  }

  forward(x: Tensor): Tensor {
    return linear(x, this.weight, this.bias);
  }

  override extraRepr(): string {
    return `in_features=${this.inFeatures}, out_features=${this.outFeatures}, bias=${pyRepr(this.bias !== null)}`;
  }
}
