/**
 * fl.parallel.tensor: Megatron-LM's tensor-parallel layers, the conjugate operators they are built
 * from, and a vocabulary-parallel cross-entropy. Forward and backward are synchronous: their
 * collectives are ordered on the device, so `loss.backward()` trains them.
 */
export { ColumnParallelLinear, RowParallelLinear, type ColumnParallelLinearOptions, type RowParallelLinearOptions } from './linear';
export { VocabParallelEmbedding, type VocabParallelEmbeddingOptions } from './embedding';
export {
  ParallelMultiheadAttention,
  type ParallelMultiheadAttentionOptions,
  type ParallelMultiheadAttentionForwardOptions,
} from './attention';
export { vocabParallelCrossEntropy, type VocabParallelCrossEntropyOptions } from './cross_entropy';
export { copyToParallel, reduceFromParallel, scatterToParallel, gatherFromParallel } from './mappings';
export {
  CopyToParallel,
  ReduceFromParallel,
  ScatterToParallel,
  GatherFromParallel,
  type ParallelMappingOptions,
} from './modules';
