/**
 * VocabParallelEmbedding: the rows of the table (the vocabulary) split across the group. Each rank
 * looks up the indices in its range, writes zeros for the others, and the partial lookups are
 * summed over the group (reduceFromParallel), so every rank gets the full embedding.
 */
import type { Tensor } from '../../tensor';
import type { DType } from '../../dtype';
import type { ProcessGroup } from '../../distributed/process_group';
import { Module } from '../../nn/module';
import { Embedding } from '../../nn/embedding';
import type { Parameter } from '../../nn/parameter';
import { embedding } from '../../nn/functional/basic';
import { logicalAnd, logicalOr, where } from '../../ops/elementwise';
import { checkOptions, flockError } from '../../errors';
import { checkInt } from '../../validate';
import { checkGroup, reduceFromParallel } from './mappings';
import { shardParameter, split } from './shard';

export interface VocabParallelEmbeddingOptions {
  /** The tensor-parallel group the vocabulary is split over (required). */
  group: ProcessGroup;
  dtype?: DType;
  device?: string;
}

export class VocabParallelEmbedding extends Module {
  weight: Parameter;
  readonly group: ProcessGroup;
  /** This rank's rows: [vocabStart, vocabEnd). */
  readonly vocabStart: number;
  readonly vocabEnd: number;

  /** paddingIdx is not supported (as in Megatron-LM); passing it is an error. */
  constructor(
    readonly numEmbeddings: number,
    readonly embeddingDim: number,
    options: VocabParallelEmbeddingOptions,
  ) {
    super();
    const op = 'VocabParallelEmbedding';
    const o = checkOptions(op, options, ['group', 'dtype', 'device']);
    this.group = checkGroup(op, o.group);
    checkInt(op, 'numEmbeddings', numEmbeddings, 1);
    checkInt(op, 'embeddingDim', embeddingDim, 1);
    const rows = split(op, 'numEmbeddings', numEmbeddings, this.group.size);
    this.vocabStart = this.group.rank * rows;
    this.vocabEnd = this.vocabStart + rows;
    const full = new Embedding(numEmbeddings, embeddingDim, { dtype: o.dtype, device: o.device });
    this.weight = shardParameter(full.weight, 0, this.group.rank, this.group.size);
    full.weight.dispose();
  }

  /**
   * Integer indices of any shape → [..., embeddingDim], the same on every rank of the group. An
   * index outside [0, numEmbeddings) fails the lookup on every rank (ERR_INDEX at the next sync
   * point, as nn.Embedding), so the group's collectives stay in step.
   */
  forward(indices: Tensor): Tensor {
    const op = 'VocabParallelEmbedding';
    if (typeof indices !== 'object' || indices === null || !('dtype' in indices) || (indices.dtype !== 'i64' && indices.dtype !== 'i32'))
      throw flockError('ERR_DTYPE', op, 'indices must be an i64 or i32 tensor');
    const outside = logicalOr(indices.lt(this.vocabStart), indices.ge(this.vocabEnd));
    // Another rank's rows look up row 0 and are zeroed. An index outside the whole table keeps
    // index − vocabStart, which is outside this rank's rows too, so the lookup fails on every rank
    // instead of silently returning zeros.
    const valid = logicalAnd(indices.ge(0), indices.lt(this.numEmbeddings));
    const local = where(logicalAnd(outside, valid), 0, indices.sub(this.vocabStart)).to(indices.dtype);
    const rows = embedding(local, this.weight);
    return reduceFromParallel(rows.maskedFill(outside.unsqueeze(-1), 0), this.group);
  }

  override extraRepr(): string {
    return `${this.numEmbeddings}, ${this.embeddingDim}, rows [${this.vocabStart}, ${this.vocabEnd}), tp=${this.group.size}`;
  }
}
