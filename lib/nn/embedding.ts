/** Embedding: a lookup table of `num` vectors of size `dim`, initialised N(0, 1) as in PyTorch. */
import type { Tensor } from '../tensor';
import { arange, zeros } from '../ops/creation';
import { copy_ } from '../ops/elementwise';
import { keep } from '../memory';
import { noGrad } from '../autograd/grad_mode';
import type { DType } from '../dtype';
import { Module } from './module';
import { Parameter } from './parameter';
import { normal_ } from './init';
import { embedding } from './functional/basic';

export class Embedding extends Module {
  weight: Parameter;

  readonly paddingIdx: number | null;

  /** With `paddingIdx`, that row starts at zero and never receives a gradient (as PyTorch). */
  constructor(readonly numEmbeddings: number, readonly embeddingDim: number, options: { paddingIdx?: number; dtype?: DType; device?: string } = {}) {
    super();
    const o = { dtype: options.dtype ?? 'f32', device: options.device };
    this.weight = new Parameter(zeros([numEmbeddings, embeddingDim], o));
    normal_(this.weight);
    let pad = options.paddingIdx ?? null;
    if (pad !== null && pad < 0) pad += numEmbeddings;
    if (pad !== null && (!Number.isInteger(pad) || pad < 0 || pad >= numEmbeddings))
      throw Object.assign(new RangeError(`Embedding: paddingIdx ${options.paddingIdx} is out of range for ${numEmbeddings} embeddings`), { code: 'ERR_INDEX' });
    this.paddingIdx = pad;
    if (pad !== null) {
      const keepRows = keep(arange(0, numEmbeddings, 1, { device: options.device }).ne(pad).to(o.dtype).unsqueeze(1));
      noGrad(() => copy_(this.weight, this.weight.mul(keepRows)));
      this.weight.registerHook((g) => g.mul(keepRows));
    }
  }

  forward(indices: Tensor): Tensor {
    return embedding(indices, this.weight);
  }

  override extraRepr(): string {
    return `${this.numEmbeddings}, ${this.embeddingDim}`;
  }
}
