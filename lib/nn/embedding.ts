/** Embedding: a lookup table of `num` vectors of size `dim`, initialised N(0, 1) as in PyTorch. */
import type { Tensor } from '../tensor';
import { arange, zeros } from '../ops/creation';
import { copy_ } from '../ops/elementwise';
import { keep } from '../memory';
import { noGrad } from '../dispatch/grad_mode';
import type { DType } from '../dtype';
import { Module } from './module';
import { type Parameter, ownParameter } from './parameter';
import { normal_ } from './init';
import { embedding } from './functional/basic';
import { tensorOptions } from './functional/args';
import { checkOptions, flockError } from '../errors';
import { checkInt, checkNumber } from '../validate';

export interface EmbeddingOptions {
  /** This row starts at zero and never receives a gradient (negative counts from the end). */
  paddingIdx?: number | null;
  dtype?: DType;
  device?: string;
}

export class Embedding extends Module {
  weight: Parameter;

  readonly paddingIdx: number | null;

  /** With `paddingIdx`, that row starts at zero and never receives a gradient (as PyTorch). */
  constructor(
    readonly numEmbeddings: number,
    readonly embeddingDim: number,
    options: EmbeddingOptions = {},
  ) {
    super();
    const o = checkOptions('Embedding', options, ['paddingIdx', 'dtype', 'device']);
    checkInt('Embedding', 'numEmbeddings', numEmbeddings);
    checkInt('Embedding', 'embeddingDim', embeddingDim);
    const t = tensorOptions('Embedding', o);
    let pad =
      o.paddingIdx === undefined || o.paddingIdx === null ? null : checkNumber('Embedding', 'paddingIdx', o.paddingIdx, { integer: true });
    if (pad !== null && pad < 0) pad += numEmbeddings;
    if (pad !== null && (pad < 0 || pad >= numEmbeddings))
      throw flockError('ERR_INDEX', 'Embedding', `paddingIdx ${o.paddingIdx} is out of range for ${numEmbeddings} embeddings`);
    this.weight = ownParameter(zeros([numEmbeddings, embeddingDim], t));
    normal_(this.weight);
    this.paddingIdx = pad;
    if (pad !== null) {
      const keepRows = keep(arange(0, numEmbeddings, 1, { device: t.device }).ne(pad).to(t.dtype).unsqueeze(1));
      noGrad(() => copy_(this.weight, this.weight.mul(keepRows)));
      this.weight.registerHook((g) => g.mul(keepRows));
    }
  }

  forward(indices: Tensor): Tensor {
    return embedding(indices, this.weight);
  }

  override extraRepr(): string {
    return `${this.numEmbeddings}, ${this.embeddingDim}${this.paddingIdx === null ? '' : `, padding_idx=${this.paddingIdx}`}`;
  }
}
