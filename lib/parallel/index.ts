/** fl.parallel: training strategies across devices and processes. */
export { DistributedDataParallel, type DDPOptions, type ParameterSource } from './ddp';
