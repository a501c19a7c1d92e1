/** The torchrun-style environment a launcher sets for each process. */
import { distError } from './errors';

export interface DistEnv {
  rank: number;
  localRank: number;
  worldSize: number;
  localWorldSize: number;
  masterAddr: string;
  masterPort: number;
  token: string;
}

function int(env: NodeJS.ProcessEnv, name: string, fallback?: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') {
    if (fallback !== undefined) return fallback;
    throw distError('ERR_ARG', `distributed: environment variable ${name} is not set (start the script with \`flockml launch\`)`);
  }
  const v = Number(raw);
  if (!Number.isInteger(v) || v < 0) throw distError('ERR_ARG', `distributed: ${name}=${raw} is not a non-negative integer`);
  return v;
}

/** Reads RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT, FLOCKML_TOKEN. */
export function readEnv(env: NodeJS.ProcessEnv = process.env): DistEnv {
  const worldSize = int(env, 'WORLD_SIZE');
  const rank = int(env, 'RANK');
  if (worldSize < 1 || rank >= worldSize) throw distError('ERR_ARG', `distributed: RANK=${rank} is outside WORLD_SIZE=${worldSize}`);
  const masterPort = int(env, 'MASTER_PORT');
  if (masterPort < 1 || masterPort > 65535) throw distError('ERR_ARG', `distributed: MASTER_PORT=${masterPort} is not a TCP port`);
  return {
    rank,
    worldSize,
    localRank: int(env, 'LOCAL_RANK', rank),
    localWorldSize: int(env, 'LOCAL_WORLD_SIZE', worldSize),
    masterAddr: env.MASTER_ADDR || '127.0.0.1',
    masterPort,
    token: env.FLOCKML_TOKEN ?? '',
  };
}
