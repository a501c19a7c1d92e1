/** fl.io: safetensors files (save, load, inspect) and sharded states with their index. */
export { save, saveSync, load, loadSync, inspect, inspectSync } from './safetensors';
export type { StateDict, SaveOptions, LoadOptions, TensorEntry, SafetensorsHeader } from './safetensors';
export { saveShard, writeShardIndex, saveSharded, loadSharded, readShardIndex, shardRange, shardFileName } from './sharded';
export type { Shard, ShardIndex, ShardSaveOptions, ShardLoadOptions } from './sharded';
