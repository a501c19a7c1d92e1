/**
 * Process groups: the TS face of cpp/distributed. initProcessGroup() reads the launcher's environment and
 * meets the other ranks at the store on rank 0. For `ring` they exchange listening addresses there
 * and the native group connects to every peer; for `nccl` rank 0's ncclUniqueId travels through
 * the store and every rank creates its communicator on its CUDA device. Collectives return a
 * {@link Work} at once; the data moves on the group's communication thread (ring) or stream
 * (nccl), after the compute queued before the call.
 *
 *   const pg = await fl.distributed.initProcessGroup({ backend: 'nccl' });
 *   await fl.distributed.allReduce(grad, { op: 'avg' }).wait();
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { native } from '../native';
import type { NativeGroup, NativeReduceOp } from '../../types/native';
import type { Tensor } from '../tensor';
import type { DType } from '../dtype';
import { checkOptions } from '../errors';
import { checkBool } from '../validate';
import { Store } from './store';
import { STORE_SERVER_DEFAULTS } from './store_server';
import { readEnv, readHostId, readTransport, type DistEnv, type Transport } from './env';
import { distError, intOption } from './errors';
import { Work } from './work';

export type ReduceOp = NativeReduceOp;
export type Backend = 'ring' | 'nccl' | 'local';
const BACKENDS: readonly unknown[] = ['ring', 'nccl', 'local'] satisfies Backend[];

export interface InitOptions {
  backend?: Backend;
  /** Bound on every wait: rendezvous, connection set-up, and silence from a peer during a collective (default 60 000). */
  timeoutMs?: number;
  /** Environment to read instead of process.env. */
  env?: NodeJS.ProcessEnv;
  /** nccl: the CUDA device index this process's groups run on (default LOCAL_RANK). */
  device?: number;
}

/** Options of {@link newGroup}. */
export interface NewGroupOptions {
  /** Bound on connecting the group and on silence from a peer during its collectives (default: initProcessGroup's timeoutMs). */
  timeoutMs?: number;
}

const INIT_OPTIONS = ['backend', 'timeoutMs', 'env', 'device'] as const;
const NEW_GROUP_OPTIONS = ['timeoutMs'] as const;
const REDUCE_OPTIONS = ['op', 'ordered'] as const;
const ORDERED_OPTIONS = ['ordered'] as const;

/**
 * `ordered: true` holds back the work queued on the tensors' device after the call until the
 * collective has finished, so the next op may use its result without awaiting the Work (as a
 * collective on an NCCL compute stream, or PyTorch's async_op=False; nccl and local groups always
 * order so). The stream's worker waits, never the JS thread. Default false: later compute overlaps
 * the collective (DDP's buckets), and the result may be read once the Work has resolved.
 */
export interface CollectiveOptions {
  ordered?: boolean;
}

const orderedFlag = (op: string, o: CollectiveOptions): boolean => checkBool(op, 'ordered', o.ordered ?? false);

/** The dtypes NCCL reduces and moves; u8 and bool are refused. */
const NCCL_DTYPES: readonly DType[] = ['f32', 'f64', 'bf16', 'f16', 'i32', 'i64'];

const isLoopback = (h: string) => h === 'localhost' || h.startsWith('127.') || h === '::1';

export class ProcessGroup {
  /** This process's rank within the group, and the group's size. */
  readonly rank: number;
  readonly size: number;
  readonly backend: Backend;
  /** Global ranks of the members, in group-rank order. */
  readonly ranks: readonly number[];
  /** nccl, local: the device whose tensors this group takes ('cuda:N', 'cpu:N'); null for ring (CPU tensors). */
  readonly device: string | null;
  #h: NativeGroup | null;

  /** @internal use initProcessGroup / newGroup / initLocalGroups. */
  constructor(handle: NativeGroup, rank: number, ranks: number[], backend: Backend, device: string | null = null) {
    if (!Array.isArray(ranks) || !ranks.every(Number.isInteger) || !Number.isInteger(rank) || !BACKENDS.includes(backend))
      throw distError('ERR_ARG', 'ProcessGroup: a group is made by initProcessGroup(), newGroup() or initLocalGroups(), not with new');
    this.#h = handle;
    this.rank = rank;
    this.size = ranks.length;
    this.ranks = Object.freeze([...ranks]);
    this.backend = backend;
    this.device = device;
  }

  // The native side checks again; this names the problem before any work is queued.
  #check(op: string, ...ts: Tensor[]): void {
    if (this.backend === 'local') {
      for (const t of ts)
        if (t.device !== this.device)
          throw distError(
            'ERR_DEVICE',
            `${op}: rank ${this.rank} of this local group takes tensors on ${this.device}, got one on ${t.device}`,
          );
      return;
    }
    if (this.backend !== 'nccl') return;
    for (const t of ts) {
      if (t.device !== this.device)
        throw distError(
          'ERR_DEVICE',
          `${op}: this nccl group takes tensors on ${this.device}, got one on ${t.device}` +
            (t.device === 'cpu' ? ' (use the ring backend for CPU tensors)' : ''),
        );
      if (!NCCL_DTYPES.includes(t.dtype))
        throw distError('ERR_DTYPE', `${op}: the nccl backend takes ${NCCL_DTYPES.join(', ')} tensors, got ${t.dtype}; cast it first`);
    }
  }

  /**
   * ring: how collectives move between the ranks, 'shm' (shared memory, every rank on this host),
   * 'shm+tcp' (shared memory within each host, TCP between hosts) or 'tcp'; send/recv between two
   * ranks of one host go through shared memory too, except with 'tcp'. null for the other backends
   * and once destroyed.
   */
  get transport(): 'shm' | 'shm+tcp' | 'tcp' | null {
    return this.backend === 'ring' && this.#h ? native.ringTransport(this.#h) : null;
  }

  get #handle(): NativeGroup {
    if (!this.#h) throw distError('ERR_DISPOSED', 'process group: it has been destroyed');
    return this.#h;
  }

  /** Reduces `t` in place across the group (sum by default; avg needs a floating dtype). */
  allReduce(t: Tensor, options: { op?: ReduceOp } & CollectiveOptions = {}): Work {
    const { op } = checkOptions('allReduce', options, REDUCE_OPTIONS);
    const ordered = orderedFlag('allReduce', options);
    this.#check('allReduce', t);
    return new Work('allReduce', native.pgAllReduce(this.#handle, t.handle, op ?? 'sum', ordered));
  }

  /**
   * Reduces `t` across the group into group rank `root`'s tensor (sum by default). Local CPU groups
   * leave the other ranks' tensors unchanged; the ring and nccl backends reduce everywhere (an
   * allReduce), which gives `root` the same result.
   */
  reduce(t: Tensor, root = 0, options: { op?: ReduceOp } & CollectiveOptions = {}): Work {
    const { op } = checkOptions('reduce', options, REDUCE_OPTIONS);
    const ordered = orderedFlag('reduce', options);
    this.#check('reduce', t);
    if (this.backend !== 'local') return this.allReduce(t, op === undefined ? { ordered } : { op, ordered });
    return new Work('reduce', native.pgReduce(this.#handle, t.handle, root, op ?? 'sum', ordered));
  }

  /** Overwrites `t` everywhere with its value on group rank `root`. */
  broadcast(t: Tensor, root = 0, options: CollectiveOptions = {}): Work {
    checkOptions('broadcast', options, ORDERED_OPTIONS);
    const ordered = orderedFlag('broadcast', options);
    this.#check('broadcast', t);
    return new Work('broadcast', native.pgBroadcast(this.#handle, t.handle, root, ordered));
  }

  /** Fills `output` (size x input.numel() elements, rank-major) with every rank's `input`. */
  allGather(output: Tensor, input: Tensor, options: CollectiveOptions = {}): Work {
    checkOptions('allGather', options, ORDERED_OPTIONS);
    const ordered = orderedFlag('allGather', options);
    this.#check('allGather', input, output);
    return new Work('allGather', native.pgAllGather(this.#handle, input.handle, output.handle, ordered));
  }

  /** Reduces `input` (size blocks of output.numel() elements) and leaves block `rank` in `output`. */
  reduceScatter(output: Tensor, input: Tensor, options: { op?: ReduceOp } & CollectiveOptions = {}): Work {
    const { op } = checkOptions('reduceScatter', options, REDUCE_OPTIONS);
    const ordered = orderedFlag('reduceScatter', options);
    this.#check('reduceScatter', input, output);
    return new Work('reduceScatter', native.pgReduceScatter(this.#handle, input.handle, output.handle, op ?? 'sum', ordered));
  }

  /** Sends `t` to group rank `dst`, which must post a matching recv of the same size. */
  send(t: Tensor, dst: number, options: CollectiveOptions = {}): Work {
    checkOptions('send', options, ORDERED_OPTIONS);
    const ordered = orderedFlag('send', options);
    this.#check('send', t);
    return new Work('send', native.pgSend(this.#handle, t.handle, dst, ordered));
  }

  recv(t: Tensor, src: number, options: CollectiveOptions = {}): Work {
    checkOptions('recv', options, ORDERED_OPTIONS);
    const ordered = orderedFlag('recv', options);
    this.#check('recv', t);
    return new Work('recv', native.pgRecv(this.#handle, t.handle, src, ordered));
  }

  barrier(): Work {
    return new Work('barrier', native.pgBarrier(this.#handle));
  }

  /** Bounds how long a collective waits on a silent peer before failing with ERR_TIMEOUT. */
  setTimeout(ms: number): void {
    native.pgSetTimeout(this.#handle, ms);
  }

  /** Fails pending work and closes connections (nccl: aborts the communicator). */
  destroy(): void {
    if (!this.#h) return;
    native.pgDestroy(this.#h);
    this.#h = null;
  }
}

interface World {
  env: DistEnv;
  transport: Transport; // FLOCKML_TRANSPORT

  store: Store;
  backend: Backend;
  timeoutMs: number;
  device: number; // nccl only
  groups: number; // groups created so far, so every rank names the n-th group alike
  all: ProcessGroup[];
  default: ProcessGroup;
}
let world: World | null = null;

function requireWorld(op: string): World {
  if (!world) throw distError('ERR_ARG', `distributed.${op}: call initProcessGroup() first`);
  return world;
}

async function makeGroup(w: World, ranks: number[], timeoutMs = w.timeoutMs): Promise<ProcessGroup | null> {
  const id = w.groups++;
  const me = ranks.indexOf(w.env.rank);
  if (me < 0) return null;
  const pg = w.backend === 'nccl' ? await makeNcclGroup(w, id, me, ranks, timeoutMs) : await makeRingGroup(w, id, me, ranks, timeoutMs);
  w.all.push(pg);
  return pg;
}

/** Throws ERR_NCCL saying why when the nccl backend cannot run here (no CUDA build, no device, no library). */
export function requireNccl(op: string): void {
  const info = native.ncclInfo();
  if (!info.available)
    throw distError('ERR_NCCL', `${op}: the nccl backend is unavailable: ${info.reason}; use backend 'ring' for CPU tensors`);
}

/** Resolves with `ready`, or rejects with ERR_TIMEOUT after `ms` (the native side is then torn down by the caller). */
export async function withinTimeout(ready: Promise<void>, ms: number, what: string): Promise<void> {
  ready.catch(() => {}); // settles later after a timeout; nobody waits for it then
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(distError('ERR_TIMEOUT', `${what} did not finish within ${ms} ms; a rank may be missing`)), ms);
  });
  try {
    await Promise.race([ready, expired]);
  } finally {
    clearTimeout(timer);
  }
}

async function makeNcclGroup(w: World, id: number, me: number, ranks: number[], timeoutMs: number): Promise<ProcessGroup> {
  requireNccl('distributed');
  const key = `pg/${id}/nccl-id`;
  let uid: Uint8Array;
  if (me === 0) {
    try {
      uid = native.ncclUniqueId();
    } catch (e) {
      // The others would otherwise wait out their timeout for an id that never comes.
      await w.store.set(key, `error:${(e as Error).message}`);
      throw e;
    }
    await w.store.set(key, Buffer.from(uid).toString('base64'));
  } else {
    const v = await w.store.get(key, timeoutMs);
    if (v.startsWith('error:')) throw distError('ERR_NCCL', `distributed: rank ${ranks[0]} could not create the NCCL id: ${v.slice(6)}`);
    uid = new Uint8Array(Buffer.from(v, 'base64'));
  }
  const { group, ready } = native.ncclInitRank(me, ranks.length, w.device, uid, timeoutMs);
  try {
    await withinTimeout(ready, timeoutMs, `distributed: ncclCommInitRank (rank ${me} of ${ranks.length}, cuda:${w.device})`);
  } catch (e) {
    native.pgDestroy(group);
    throw e;
  }
  return new ProcessGroup(group, me, ranks, 'nccl', `cuda:${w.device}`);
}

async function makeRingGroup(w: World, id: number, me: number, ranks: number[], timeoutMs: number): Promise<ProcessGroup> {
  const loop = isLoopback(w.env.masterAddr);
  // On loopback the ranks meet on the master's own loopback address (127.0.0.1 or ::1); across
  // machines each listens on every address and advertises its host name (or FLOCKML_ADVERTISE_ADDR).
  const loopAddr = w.env.masterAddr === '::1' ? '::1' : '127.0.0.1';
  const advertise = w.env.masterAddr && loop ? loopAddr : process.env.FLOCKML_ADVERTISE_ADDR || hostname();
  // Named in collective-mismatch errors; group ranks there are this group's own.
  const name = ranks.length === w.env.worldSize ? `group ${id}` : `group ${id} (global ranks ${ranks.join(', ')})`;
  const { group, port } = native.ringListen(me, ranks.length, loop ? loopAddr : '', timeoutMs, name);
  try {
    const key = (r: number) => `pg/${id}/addr/${r}`;
    await w.store.set(key(me), `${advertise}:${port}`);
    const addrs = await Promise.all(ranks.map((_, r) => w.store.get(key(r), timeoutMs)));
    const hosts = addrs.map((a) => a.slice(0, a.lastIndexOf(':')));
    const ports = addrs.map((a) => Number(a.slice(a.lastIndexOf(':') + 1)));
    const shm = await shmName(w, id, me, ranks, timeoutMs);
    await native.ringConnect(group, hosts, ports, shm.name, shm.hostOf);
  } catch (e) {
    native.pgDestroy(group);
    throw e;
  }
  return new ProcessGroup(group, me, ranks, 'ring');
}

// This machine and boot: ranks that share both share /dev/shm (unless containers split them, in
// which case their host names differ too). FLOCKML_HOST_ID replaces it.
function hostIdentity(): string {
  const id = readHostId();
  if (id !== undefined) return `${id}#FLOCKML_HOST_ID`;
  let boot = '';
  try {
    boot = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  } catch {
    // not Linux: the host name alone
  }
  return `${hostname()}#${boot}`;
}

/**
 * The shared-memory segment a ring group's collectives go through, or '' for TCP. Every rank
 * publishes its FLOCKML_TRANSPORT and host identity (rank 0 also a fresh run id that names the
 * segment) and all decide alike from the same list: shm when every rank is on this host and none
 * asked for tcp; when the ranks span hosts and some host runs two or more (and none asked for
 * tcp), shm within each host and TCP between them, with `hostOf` the host index of each rank.
 */
async function shmName(w: World, id: number, me: number, ranks: number[], timeoutMs: number): Promise<{ name: string; hostOf?: number[] }> {
  const key = (r: number) => `pg/${id}/transport/${r}`;
  const run = me === 0 ? ` ${randomBytes(8).toString('hex')}` : '';
  await w.store.set(key(me), `${w.transport} ${hostIdentity()}${run}`);
  const said = (await Promise.all(ranks.map((_, r) => w.store.get(key(r), timeoutMs)))).map((v) => v.split(' '));
  const wants = new Set(said.map((v) => v[0]));
  if (wants.has('tcp') && wants.has('shm'))
    throw distError(
      'ERR_ARG',
      `distributed: the ranks of group ${id} disagree on FLOCKML_TRANSPORT (${said.map((v, r) => `rank ${ranks[r]}: ${v[0]}`).join(', ')})`,
    );
  if (ranks.length < 2 || wants.has('tcp')) return { name: '' };
  const name = `/flockml-${said[0][2]}-g${id}`;
  const other = said.findIndex((v) => v[1] !== said[0][1]);
  if (other < 0) return { name };
  if (wants.has('shm'))
    throw distError(
      'ERR_ARG',
      `distributed: FLOCKML_TRANSPORT=shm, but rank ${ranks[other]} runs on another host than rank ${ranks[0]} ` +
        `(${said[other][1].split('#')[0]} vs ${said[0][1].split('#')[0]}); leave it unset to use TCP between hosts`,
    );
  const hosts = [...new Set(said.map((v) => v[1]))];
  const hostOf = said.map((v) => hosts.indexOf(v[1]));
  if (hosts.length === ranks.length) return { name: '' }; // one rank per host: TCP only
  return { name, hostOf };
}

/**
 * Joins the job described by RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT (and LOCAL_RANK,
 * LOCAL_WORLD_SIZE, FLOCKML_TOKEN), as `flockml launch` sets them. Rank 0 hosts the store.
 */
export async function initProcessGroup(options: InitOptions = {}): Promise<ProcessGroup> {
  const op = 'distributed.initProcessGroup';
  checkOptions(op, options, INIT_OPTIONS);
  if (world) throw distError('ERR_ARG', `${op}: already initialised; call destroyProcessGroup() first`);
  const backend = options.backend ?? 'ring';
  if (backend !== 'ring' && backend !== 'nccl') throw distError('ERR_ARG', `${op}: unknown backend '${String(backend)}' (ring, nccl)`);
  const timeoutMs = intOption(op, 'timeoutMs', options.timeoutMs ?? 60_000, 1, 2 ** 30);
  if (options.env !== undefined && (options.env === null || typeof options.env !== 'object'))
    throw distError('ERR_ARG', `${op}: env must be an object of environment variables`);
  const env = readEnv(options.env);
  const transport = readTransport(options.env);
  // Once per job (rank 0), e.g. a store token derived from the engine's job id.
  if (env.rank === 0) for (const w of env.warnings) process.emitWarning(w, 'FlockmlWarning');
  const device = options.device ?? env.localRank;
  if (!Number.isInteger(device) || device < 0)
    throw distError('ERR_ARG', `distributed.initProcessGroup: device must be a CUDA device index, got ${String(device)}`);
  // Before the store: a rank that cannot run NCCL says why at once instead of timing out later.
  if (backend === 'nccl') requireNccl('distributed.initProcessGroup');
  // One store connection per rank, and room for a user's own: the default cap must not refuse a large world.
  const maxConnections = Math.max(STORE_SERVER_DEFAULTS.maxConnections, 2 * env.worldSize);
  const store = await Store.connect({
    host: env.masterAddr,
    port: env.masterPort,
    token: env.token,
    isServer: env.rank === 0,
    timeoutMs,
    maxConnections,
  });
  const w: World = { env, transport, store, backend, timeoutMs, device, groups: 0, all: [], default: null as unknown as ProcessGroup };
  try {
    w.default = (await makeGroup(
      w,
      Array.from({ length: env.worldSize }, (_, i) => i),
    ))!;
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
export async function newGroup(ranks: number[], options: NewGroupOptions = {}): Promise<ProcessGroup | null> {
  const op = 'distributed.newGroup';
  checkOptions(op, options, NEW_GROUP_OPTIONS);
  const w = requireWorld('newGroup');
  if (!Array.isArray(ranks)) throw distError('ERR_ARG', `${op}: ranks must be an array of global ranks`);
  const sorted = [...new Set(ranks)].sort((a, b) => a - b);
  if (sorted.length !== ranks.length || sorted.some((r) => !Number.isInteger(r) || r < 0 || r >= w.env.worldSize))
    throw distError('ERR_ARG', `${op}: ranks must be distinct integers in [0, ${w.env.worldSize}), got [${ranks.join(', ')}]`);
  return makeGroup(w, sorted, intOption(op, 'timeoutMs', options.timeoutMs ?? w.timeoutMs, 1, 2 ** 30));
}

/** Tears down every group and the store connection (rank 0 waits for the others first). */
export async function destroyProcessGroup(): Promise<void> {
  const w = world;
  if (!w) return;
  world = null;
  try {
    // Rank 0 hosts the store: leaving before the others have finished with it would fail them. A
    // peer that died never arrives, so a barrier of the default group runs alongside as a probe:
    // it fails as soon as the group sees a peer gone (ERR_PEER_LOST), and then no rank waits out
    // the store barrier's timeout.
    const stored = w.store.barrier(w.env.worldSize, '__destroy', w.timeoutMs);
    stored.catch(() => undefined);
    let probe: Promise<void>;
    try {
      probe = w.default.barrier().wait();
    } catch (e) {
      probe = Promise.reject(e);
    }
    await Promise.race([stored, probe.then(() => stored)]);
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

const GROUP = ['group', 'ordered'] as const,
  REDUCE_IN_GROUP = ['op', 'group', 'ordered'] as const;
type InGroup = { group?: ProcessGroup } & CollectiveOptions;
const ord = (o: CollectiveOptions): CollectiveOptions => (o.ordered === undefined ? {} : { ordered: o.ordered });
const opts = <T extends object>(op: string, o: T | undefined, accepted: readonly string[]): T =>
  checkOptions(`distributed.${op}`, o, accepted);

export const allReduce = (t: Tensor, o: { op?: ReduceOp } & InGroup = {}): Work => {
  const { op, group } = opts('allReduce', o, REDUCE_IN_GROUP);
  return groupOf('allReduce', group).allReduce(t, op === undefined ? ord(o) : { op, ...ord(o) });
};
export const broadcast = (t: Tensor, o: { src?: number } & InGroup = {}): Work => {
  const { src, group } = opts('broadcast', o, ['src', 'group', 'ordered']);
  return groupOf('broadcast', group).broadcast(t, src ?? 0, ord(o));
};
export const allGather = (output: Tensor, input: Tensor, o: InGroup = {}): Work =>
  groupOf('allGather', opts('allGather', o, GROUP).group).allGather(output, input, ord(o));
export const reduceScatter = (output: Tensor, input: Tensor, o: { op?: ReduceOp } & InGroup = {}): Work => {
  const { op, group } = opts('reduceScatter', o, REDUCE_IN_GROUP);
  return groupOf('reduceScatter', group).reduceScatter(output, input, op === undefined ? ord(o) : { op, ...ord(o) });
};
export const send = (t: Tensor, dst: number, o: InGroup = {}): Work => groupOf('send', opts('send', o, GROUP).group).send(t, dst, ord(o));
export const recv = (t: Tensor, src: number, o: InGroup = {}): Work => groupOf('recv', opts('recv', o, GROUP).group).recv(t, src, ord(o));
export const barrier = (o: { group?: ProcessGroup } = {}): Work => groupOf('barrier', opts('barrier', o, GROUP).group).barrier();
