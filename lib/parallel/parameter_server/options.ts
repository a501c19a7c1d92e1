/** The options of {@link ParameterServer.create}, checked on every rank before anything connects. */
import type { Tensor } from '../../tensor';
import { argError, checkOptions, describe, flockError } from '../../errors';
import { readEnv, readTransport, type DistEnv } from '../../distributed/env';

export interface ParameterServerOptions {
  /** How many ranks serve parameters: ranks 0 … servers − 1 (default 1). The rest are workers. */
  servers?: number;
  /**
   * How many clocks the fastest worker may run ahead of the slowest live one: 0 is synchronous SGD,
   * Infinity fully asynchronous (default Infinity, as TensorFlow's ParameterServerStrategy).
   */
  staleness?: number;
  /** The optimizer class the servers run over their shards, e.g. fl.optim.SGD (required). */
  optimizer: new (
    params: Tensor[],
    options: never,
  ) => { step(): void };
  /** Its options, e.g. { lr: 0.1 }. */
  optimizerOptions?: object;
  /**
   * Bound on rendezvous and connecting; a worker silent this long (not waiting on a read) is
   * dropped, and expected workers that have not joined by then are given up on (default 60 000).
   */
  timeoutMs?: number;
  /** Environment to read instead of process.env. */
  env?: NodeJS.ProcessEnv;
}

const KEYS = ['servers', 'staleness', 'optimizer', 'optimizerOptions', 'timeoutMs', 'env'] as const;

export interface CheckedOptions {
  rank: number;
  worldSize: number;
  servers: number;
  staleness: number;
  optimizer: ParameterServerOptions['optimizer'];
  optimizerOptions: object;
  timeoutMs: number;
  env: DistEnv;
  /**
   * FLOCKML_TRANSPORT: 'auto' (shared memory with the servers that can map it), 'shm' (an error
   * where a server cannot) or 'tcp' (the sockets only).
   */
  transport: 'auto' | 'shm' | 'tcp';
}

export function checkPsOptions(op: string, options: ParameterServerOptions): CheckedOptions {
  if (options === undefined) throw argError(op, 'options { optimizer, … } are required');
  const o = checkOptions(op, options, KEYS);
  if (typeof o.optimizer !== 'function')
    throw argError(op, `optimizer must be an optimizer class such as fl.optim.SGD, got ${describe(o.optimizer)}`);
  const optimizerOptions = o.optimizerOptions ?? {};
  if (optimizerOptions === null || typeof optimizerOptions !== 'object' || Array.isArray(optimizerOptions))
    throw argError(op, `optimizerOptions must be an object, got ${describe(optimizerOptions)}`);
  const staleness = o.staleness ?? Infinity;
  if (typeof staleness !== 'number' || !(staleness === Infinity || (Number.isInteger(staleness) && staleness >= 0)))
    throw flockError('ERR_RANGE', op, `staleness must be an integer ≥ 0 or Infinity, got ${describe(staleness)}`);
  const timeoutMs = o.timeoutMs ?? 60_000;
  if (typeof timeoutMs !== 'number' || !Number.isInteger(timeoutMs) || timeoutMs < 1)
    throw flockError('ERR_RANGE', op, `timeoutMs must be a positive integer, got ${describe(timeoutMs)}`);
  if (o.env !== undefined && (o.env === null || typeof o.env !== 'object'))
    throw argError(op, `env must be an object, got ${describe(o.env)}`);
  const env = readEnv(o.env ?? process.env);
  const transport = readTransport(o.env ?? process.env);
  const servers = o.servers ?? 1;
  if (typeof servers !== 'number' || !Number.isInteger(servers) || servers < 1)
    throw flockError('ERR_RANGE', op, `servers must be a positive integer, got ${describe(servers)}`);
  if (servers >= env.worldSize)
    throw flockError(
      'ERR_RANGE',
      op,
      `servers is ${servers} in a world of ${env.worldSize}: at least one rank must be a worker (ranks ${servers} and up)`,
    );
  return {
    rank: env.rank,
    worldSize: env.worldSize,
    servers,
    staleness,
    optimizer: o.optimizer,
    optimizerOptions,
    timeoutMs,
    env,
    transport,
  };
}
