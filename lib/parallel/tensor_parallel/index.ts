/**
 * fl.parallel.tensor: Megatron-LM's tensor-parallel layers, the conjugate operators they are built
 * from, a vocabulary-parallel cross-entropy, and the backward pass that runs their collectives.
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
export { backward, CommNode, type TensorParallelBackwardOptions } from './backward';
