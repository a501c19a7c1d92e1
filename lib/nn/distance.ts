/** PairwiseDistance and CosineSimilarity layers: the functional distances with options checked at construction. */
import type { Tensor } from '../tensor';
import { Module } from './module';
import { checkOptions } from '../errors';
import { type CosineSimilarityOptions, type PairwiseDistanceOptions, cosineSimilarity, pairwiseDistance } from './functional/distance';
import { checkBool, checkNumber } from '../validate';

/** ‖x1 − x2 + eps‖_p over the last dim, as torch.nn.PairwiseDistance (p 2, eps 1e-6 by default). */
export class PairwiseDistance extends Module {
  constructor(readonly options: PairwiseDistanceOptions = {}) {
    super();
    const o = checkOptions('PairwiseDistance', options, ['p', 'eps', 'keepdim']);
    if (o.p !== undefined) checkNumber('PairwiseDistance', 'p', o.p, { infinite: true });
    if (o.eps !== undefined) checkNumber('PairwiseDistance', 'eps', o.eps);
    if (o.keepdim !== undefined) checkBool('PairwiseDistance', 'keepdim', o.keepdim);
  }
  forward(x1: Tensor, x2: Tensor): Tensor {
    return pairwiseDistance(x1, x2, this.options);
  }
}

/** The cosine similarity of x1 and x2 along `dim`, as torch.nn.CosineSimilarity (dim 1, eps 1e-8 by default). */
export class CosineSimilarity extends Module {
  constructor(readonly options: CosineSimilarityOptions = {}) {
    super();
    const o = checkOptions('CosineSimilarity', options, ['dim', 'eps']);
    if (o.dim !== undefined) checkNumber('CosineSimilarity', 'dim', o.dim, { integer: true });
    if (o.eps !== undefined) checkNumber('CosineSimilarity', 'eps', o.eps, { min: 0 });
  }
  forward(x1: Tensor, x2: Tensor): Tensor {
    return cosineSimilarity(x1, x2, this.options);
  }
}
