/** fl.distributed: process groups, collectives, the rendezvous store and the launcher. */
export {
  ProcessGroup,
  initProcessGroup,
  newGroup,
  destroyProcessGroup,
  isInitialized,
  getRank,
  getWorldSize,
  getLocalRank,
  getStore,
  allReduce,
  broadcast,
  allGather,
  reduceScatter,
  send,
  recv,
  barrier,
  type ReduceOp,
  type Backend,
  type InitOptions,
  type NewGroupOptions,
} from './process_group';
export { initLocalGroups, type LocalGroupsOptions } from './local_groups';
export { Work } from './work';
export { Store, type StoreOptions } from './store';
export { readEnv, type DistEnv } from './env';
export { launch, type LaunchOptions } from './launch';
export { DeviceMesh, deviceMesh, type DeviceMeshOptions } from './mesh';
