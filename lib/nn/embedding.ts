/** Embedding: a lookup table of `num` vectors of size `dim`, initialised N(0, 1) as in PyTorch. */
import type { Tensor } from '../tensor';
import { zeros } from '../ops/creation';
import type { DType } from '../dtype';
import { Module } from './module';
import { Parameter } from './parameter';
import { normal_ } from './init';
import { embedding } from './functional/basic';

export class Embedding extends Module {
  weight: Parameter;

  constructor(readonly numEmbeddings: number, readonly embeddingDim: number, options: { dtype?: DType; device?: string } = {}) {
    super();
    this.weight = new Parameter(zeros([numEmbeddings, embeddingDim], { dtype: options.dtype ?? 'f32', device: options.device }));
    normal_(this.weight);
  }

  forward(indices: Tensor): Tensor {
    return embedding(indices, this.weight);
  }

  override extraRepr(): string {
    return `${this.numEmbeddings}, ${this.embeddingDim}`;
  }
}
