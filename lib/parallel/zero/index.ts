/** ZeRO: optimizer state, gradients and parameters sharded across data-parallel ranks. */
export { ZeroRedundancyOptimizer, type OptimizerClass, type ZeroOptions } from './optimizer';
export type { ZeroStage, ZeroGradientSource } from './source';
export { FullyShardedDataParallel, type FSDPOptions, type ShardedUnit } from './fsdp';
