/** fl.parallel: training strategies across devices and processes. */
export { DistributedDataParallel, type DDPOptions, type ParameterSource } from './ddp';
export { DataParallel, ReplicatedOptimizer, type DataParallelOptions, type ReplicaGroup } from './data_parallel';
export { CentralStorage, type CentralStorageOptions } from './central_storage';
export { placeModule, placement } from './place';
export { Pipeline, type PipelineOptions, type PipelineStats } from './pipeline';
export {
  stageOrder,
  ticks as pipelineTicks,
  theoreticalBubble,
  type Schedule as PipelineSchedule,
  type Action as PipelineAction,
} from './pipeline_schedule';
export { replicate } from './devices';
export * as tensor from './tensor_parallel/index';
export {
  DistributedPipeline,
  type DistributedPipelineOptions,
  type DistributedPipelineStats,
  type PipelineStageModule,
} from './pipeline_ranks';
export {
  ParameterServer,
  type ParameterServerOptions,
  type ServerStats as ParameterServerStats,
  type PushStats,
  type WorkerStats,
} from './parameter_server/index';
export {
  ZeroRedundancyOptimizer,
  FullyShardedDataParallel,
  type ZeroOptions,
  type ZeroStage,
  type FSDPOptions,
  type ShardedUnit,
} from './zero/index';
