/**
 * Process groups: the TS face of cpp/dist. initProcessGroup() reads the launcher's environment,
 * meets the other ranks at the store on rank 0, exchanges listening addresses there, and has the
 * native group connect to every peer. Collectives return a {@link Work} at once; the data moves
 * on the group's communication thread, after the compute queued before the call.
 *
 *   const pg = await fl.distributed.initProcessGroup({ backend: 'ring' });
 *   await fl.distributed.allReduce(grad, { op: 'avg' }).wait();
 */
import { hostname } from 'node:os';
import { native } from '../native';
import type { NativeGroup, NativeReduceOp } from '../../types/native';
import type { Tensor } from '../tensor';
import { Store } from './store';
import { readEnv, type DistEnv } from './env';
import { distError } from './errors';
import { Work } from './work';

export type ReduceOp = NativeReduceOp;
export type Backend = 'ring' | 'nccl';

export interface InitOptions {
  backend?: Backend;
  /** Bound on every wait: rendezvous, connection set-up, and silence from a peer during a collective (default 60 000). */
  timeoutMs?: number;
  /** Environment to read instead of process.env. */
  env?: NodeJS.ProcessEnv;
}

const isLoopback = (h: string) => h === 'localhost' || h.startsWith('127.') || h === '::1';

export class ProcessGroup {
  /** This process's rank within the group, and the group's size. */
  readonly rank: number;
  readonly size: number;
  readonly backend: Backend;
  /** Global ranks of the members, in group-rank order. */
  readonly ranks: readonly number[];
  #h: NativeGroup | null;

  /** @internal use initProcessGroup / newGroup. */
  constructor(handle: NativeGroup, rank: number, ranks: number[], backend: Backend) {
    this.#h = handle;
    this.rank = rank;
    this.size = ranks.length;
    this.ranks = Object.freeze([...ranks]);
    this.backend = backend;
  }

  get #handle(): NativeGroup {
    if (!this.#h) throw Object.assign(new TypeError('process group: it has been destroyed'), { code: 'ERR_DISPOSED' });
    return this.#h;
  }

  /** Reduces `t` in place across the group (sum by default; avg needs a floating dtype). */
  allReduce(t: Tensor, options: { op?: ReduceOp } = {}): Work {
    return new Work('allReduce', native.pgAllReduce(this.#handle, t.handle, options.op ?? 'sum'));
  }

  /** Overwrites `t` everywhere with its value on group rank `root`. */
  broadcast(t: Tensor, root = 0): Work {
    return new Work('broadcast', native.pgBroadcast(this.#handle, t.handle, root));
  }

  /** Fills `output` (size x input.size elements, rank-major) with every rank's `input`. */
  allGather(output: Tensor, input: Tensor): Work {
    return new Work('allGather', native.pgAllGather(this.#handle, input.handle, output.handle));
  }

  /** Reduces `input` (size blocks of output.size elements) and leaves block `rank` in `output`. */
  reduceScatter(output: Tensor, input: Tensor, options: { op?: ReduceOp } = {}): Work {
    return new Work('reduceScatter', native.pgReduceScatter(this.#handle, input.handle, output.handle, options.op ?? 'sum'));
  }

  /** Sends `t` to group rank `dst`, which must post a matching recv of the same size. */
  send(t: Tensor, dst: number): Work {
    return new Work('send', native.pgSend(this.#handle, t.handle, dst));
  }

  recv(t: Tensor, src: number): Work {
    return new Work('recv', native.pgRecv(this.#handle, t.handle, src));
  }

  barrier(): Work {
    return new Work('barrier', native.pgBarrier(this.#handle));
  }

  /** Bounds how long a collective waits on a silent peer before failing with ERR_TIMEOUT. */
  setTimeout(ms: number): void {
    native.pgSetTimeout(this.#handle, ms);
  }

  /** Fails pending work and closes connections. */
  destroy(): void {
    if (!this.#h) return;
    native.pgDestroy(this.#h);
    this.#h = null;
  }
}

interface World {
  env: DistEnv;
  store: Store;
  backend: Backend;
  timeoutMs: number;
  groups: number;  // groups created so far, so every rank names the n-th group alike
  all: ProcessGroup[];
  default: ProcessGroup;
}
let world: World | null = null;

function requireWorld(op: string): World {
  if (!world) throw distError('ERR_ARG', `distributed.${op}: call initProcessGroup() first`);
  return world;
}

async function makeGroup(w: World, ranks: number[]): Promise<ProcessGroup | null> {
  const id = w.groups++;
  const me = ranks.indexOf(w.env.rank);
  if (me < 0) return null;
  if (w.backend === 'nccl') {
    const info = native.ncclInfo();
    throw distError('ERR_NCCL', info.available
      ? `distributed: NCCL ${info.version} was found, but CUDA collectives are not wired into this build yet; use backend 'ring'`
      : `distributed: the nccl backend is unavailable: ${info.reason}; use backend 'ring' for CPU tensors`);
  }
  const loop = isLoopback(w.env.masterAddr);
  // On loopback the ranks meet on the master's own loopback address (127.0.0.1 or ::1); across
  // machines each listens on every address and advertises its host name (or FLOCKML_ADVERTISE_ADDR).
  const loopAddr = w.env.masterAddr === '::1' ? '::1' : '127.0.0.1';
  const advertise = w.env.masterAddr && loop ? loopAddr : process.env.FLOCKML_ADVERTISE_ADDR || hostname();
  const { group, port } = native.ringListen(me, ranks.length, loop ? loopAddr : '', w.timeoutMs);
  try {
    const key = (r: number) => `pg/${id}/addr/${r}`;
    await w.store.set(key(me), `${advertise}:${port}`);
    const addrs = await Promise.all(ranks.map((_, r) => w.store.get(key(r), w.timeoutMs)));
    const hosts = addrs.map((a) => a.slice(0, a.lastIndexOf(':')));
    const ports = addrs.map((a) => Number(a.slice(a.lastIndexOf(':') + 1)));
    await native.ringConnect(group, hosts, ports);
  } catch (e) {
    native.pgDestroy(group);
    throw e;
  }
  const pg = new ProcessGroup(group, me, ranks, w.backend);
  w.all.push(pg);
  return pg;
}

/**
 * Joins the job described by RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT (and LOCAL_RANK,
 * LOCAL_WORLD_SIZE, FLOCKML_TOKEN), as `flockml launch` sets them. Rank 0 hosts the store.
 */
export async function initProcessGroup(options: InitOptions = {}): Promise<ProcessGroup> {
  if (world) throw distError('ERR_ARG', 'distributed.initProcessGroup: already initialised; call destroyProcessGroup() first');
  const backend = options.backend ?? 'ring';
  if (backend !== 'ring' && backend !== 'nccl') throw distError('ERR_ARG', `distributed.initProcessGroup: unknown backend '${String(backend)}' (ring, nccl)`);
  const timeoutMs = options.timeoutMs ?? 60_000;
  const env = readEnv(options.env);
  const store = await Store.connect({ host: env.masterAddr, port: env.masterPort, token: env.token, isServer: env.rank === 0, timeoutMs });
  const w: World = { env, store, backend, timeoutMs, groups: 0, all: [], default: null as unknown as ProcessGroup };
  try {
    w.default = (await makeGroup(w, Array.from({ length: env.worldSize }, (_, i) => i)))!;
  } catch (e) {
    await store.close();
    throw e;
  }
  world = w;
  return w.default;
}

/**
 * A group of some of the ranks. Every rank must call newGroup with the same lists in the same
 * order (as in torch.distributed); ranks outside `ranks` get null.
 */
export function newGroup(ranks: number[]): Promise<ProcessGroup | null> {
  const w = requireWorld('newGroup');
  const sorted = [...new Set(ranks)].sort((a, b) => a - b);
  if (sorted.length !== ranks.length || sorted.some((r) => !Number.isInteger(r) || r < 0 || r >= w.env.worldSize))
    throw distError('ERR_ARG', `distributed.newGroup: ranks must be distinct integers in [0, ${w.env.worldSize}), got [${ranks.join(', ')}]`);
  return makeGroup(w, sorted);
}

/** Tears down every group and the store connection (rank 0 waits for the others first). */
export async function destroyProcessGroup(): Promise<void> {
  const w = world;
  if (!w) return;
  world = null;
  try {
    // Rank 0 hosts the store: leaving before the others have finished with it would fail them.
    await w.store.barrier(w.env.worldSize, '__destroy', w.timeoutMs);
  } catch {
    // a peer already died; nothing left to coordinate
  }
  for (const g of w.all) g.destroy();
  await w.store.close();
}

export function isInitialized(): boolean {
  return world !== null;
}
export function getRank(): number {
  return requireWorld('getRank').env.rank;
}
export function getWorldSize(): number {
  return requireWorld('getWorldSize').env.worldSize;
}
export function getLocalRank(): number {
  return requireWorld('getLocalRank').env.localRank;
}
/** The store of the current job, for user-level rendezvous. */
export function getStore(): Store {
  return requireWorld('getStore').store;
}

function groupOf(op: string, g?: ProcessGroup): ProcessGroup {
  return g ?? requireWorld(op).default;
}

export const allReduce = (t: Tensor, o: { op?: ReduceOp; group?: ProcessGroup } = {}): Work => groupOf('allReduce', o.group).allReduce(t, o);
export const broadcast = (t: Tensor, o: { src?: number; group?: ProcessGroup } = {}): Work => groupOf('broadcast', o.group).broadcast(t, o.src ?? 0);
export const allGather = (output: Tensor, input: Tensor, o: { group?: ProcessGroup } = {}): Work => groupOf('allGather', o.group).allGather(output, input);
export const reduceScatter = (output: Tensor, input: Tensor, o: { op?: ReduceOp; group?: ProcessGroup } = {}): Work =>
  groupOf('reduceScatter', o.group).reduceScatter(output, input, o);
export const send = (t: Tensor, dst: number, o: { group?: ProcessGroup } = {}): Work => groupOf('send', o.group).send(t, dst);
export const recv = (t: Tensor, src: number, o: { group?: ProcessGroup } = {}): Work => groupOf('recv', o.group).recv(t, src);
export const barrier = (o: { group?: ProcessGroup } = {}): Work => groupOf('barrier', o.group).barrier();
