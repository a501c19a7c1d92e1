/**
 * ParameterServer: asynchronous data-parallel training with bounded staleness (TensorFlow's
 * ParameterServerStrategy, stale-synchronous parallel). The first `servers` ranks hold the
 * parameters, whole tensors split between them balanced by bytes, and run the optimizer over their
 * shard; the other ranks are workers that pull parameters, compute gradients and push them, with no
 * global barrier. A worker's clock counts its pushes; it may read the parameters at clock c once
 * c − (the slowest live worker's clock) ≤ staleness, so no push is computed on parameters more than
 * `staleness` clocks behind the slowest worker.
 *
 * staleness 0 is synchronous SGD: the server holds round c's pushes (one from every live worker),
 * averages them, takes one optimizer step and only then answers the reads for clock c + 1, which is
 * exactly DistributedDataParallel with the same optimizer. With staleness > 0 every push is
 * applied as it arrives (as TensorFlow's asynchronous training: gradients are not divided by the
 * number of workers). Infinity never waits (fully asynchronous).
 *
 *   const ps = await fl.parallel.ParameterServer.create(model, { servers: 1, staleness: 2, optimizer: fl.optim.Adam, optimizerOptions: { lr: 1e-3 } });
 *   if (ps.isServer) console.log(await ps.serve());
 *   else {
 *     for (const [x, y] of loader) {
 *       await ps.pull();
 *       model.zeroGrad(); lossFn(model.forward(x), y).backward();
 *       await ps.push();
 *     }
 *     await ps.close();
 *   }
 *
 * Requests travel over TCP; between a worker and a server on one host the gradients and parameters
 * themselves go through shared memory (shm.ts), unless FLOCKML_TRANSPORT=tcp (with =shm, a
 * server that cannot map it is an error).
 *
 * A worker whose connection closes, or that is silent for timeoutMs, is dropped and the others go
 * on; a worker may join at any time (a restarted rank supersedes its old connection) and starts at
 * the slowest live worker's clock. A server that is lost fails the workers' next pull or push with
 * ERR_PEER_LOST naming its rank.
 */
import { hostname } from 'node:os';
import type { Tensor } from '../../tensor';
import type { Module } from '../../nn/module';
import { copy_ } from '../../ops/elementwise';
import { noGrad } from '../../dispatch/grad_mode';
import { argError, describe, flockError } from '../../errors';
import { Store } from '../../distributed/store';
import { getStore, isInitialized } from '../../distributed/process_group';
import { ServerLink } from './link';
import { ShardServer, type ServerStats } from './server';
import { type ParamSpec, assignShards, describeShard, paramSpecs, shardBytes } from './shard';
import { readFlat, tensorsOf } from './flat';
import { createShared, sharedBytes, unlinkShared, writeShared } from './shm';
import { type ParameterServerOptions, checkPsOptions } from './options';
import { checkCreateKey } from '../../validate';

export type { ServerStats } from './server';
export type { ParameterServerOptions } from './options';

/** What a worker's push reports. */
export interface PushStats {
  /** The worker's clock after this push (its pushes so far). */
  clock: number;
  /** How many clocks the parameters this gradient was computed on were behind: never above staleness. */
  staleness: number;
}

/** A worker's record of its pushes. */
export interface WorkerStats {
  clock: number;
  pushes: number;
  /** Pushes counted by staleness. */
  staleness: Record<number, number>;
  maxStaleness: number;
}

const OP = 'ParameterServer';

/** What ParameterServer.create passes its constructor: a user's `new` has no such key and is refused. */
const CREATE: unique symbol = Symbol('ParameterServer.create');

export class ParameterServer {
  readonly rank: number;
  readonly worldSize: number;
  /** Server ranks are 0 … servers − 1. */
  readonly servers: number;
  readonly staleness: number;
  readonly isServer: boolean;
  /** Per server rank, the parameters it holds (indices into model.parameters()). */
  readonly shards: readonly (readonly number[])[];
  readonly #params: Tensor[];
  readonly #specs: ParamSpec[][];
  #store: Store | null;
  #server: ShardServer | null = null;
  #links: ServerLink[] = [];
  /** Per server, the shared memory it mapped (gradient slot, then parameter slot), or null: the socket carries the data. */
  #shared: Array<ArrayBuffer | null> = [];
  readonly #transport: 'auto' | 'shm' | 'tcp';
  #clock = 0;
  #readBase: number | null = null;
  #busy = false;
  #closed = false;
  readonly #stats: WorkerStats = { clock: 0, pushes: 0, staleness: {}, maxStaleness: 0 };
  readonly #timeoutMs: number;

  private constructor(
    key: typeof CREATE,
    params: Tensor[],
    specs: ParamSpec[][],
    o: ReturnType<typeof checkPsOptions>,
    store: Store | null,
  ) {
    checkCreateKey('ParameterServer', key, CREATE, 'await fl.parallel.ParameterServer.create(model, options)');
    this.#params = params;
    this.#specs = specs;
    this.#store = store;
    this.rank = o.rank;
    this.worldSize = o.worldSize;
    this.servers = o.servers;
    this.staleness = o.staleness;
    this.isServer = o.rank < o.servers;
    this.shards = specs.map((sh) => sh.map((s) => s.index));
    this.#timeoutMs = o.timeoutMs;
    this.#transport = o.transport;
  }

  /**
   * Joins the job as a server (rank < servers) or a worker. Every rank passes the same model
   * architecture; the servers' initial parameters are the ones training starts from (workers pull
   * them). Rendezvous goes through the store on rank 0 (the process group's when one is initialized).
   */
  static async create(model: Module, options: ParameterServerOptions): Promise<ParameterServer> {
    if (!model || typeof (model as { parameters?: unknown }).parameters !== 'function')
      throw argError(OP, `model must be an nn.Module, got ${describe(model)}`);
    const o = checkPsOptions(OP, options);
    const params = model.parameters();
    if (new Set(params).size !== params.length) throw argError(OP, 'the model lists a parameter twice');
    const specs = assignShards(OP, paramSpecs(OP, params), o.servers);
    // Refuses bad optimizer options on every rank, not only on the servers.
    const probe = new o.optimizer(params, o.optimizerOptions as never);
    const own = !isInitialized();
    const store = own
      ? await Store.connect({
          host: o.env.masterAddr,
          port: o.env.masterPort,
          token: o.env.token,
          isServer: o.rank === 0,
          timeoutMs: o.timeoutMs,
        })
      : getStore();
    const ps = new ParameterServer(CREATE, params, specs, o, own ? store : null);
    const loop = isLoopback(o.env.masterAddr);
    if (ps.isServer) {
      const shard = specs[o.rank];
      const mine = shard.map((s) => params[s.index]);
      const workers = Array.from({ length: o.worldSize - o.servers }, (_, i) => o.servers + i);
      ps.#server = await ShardServer.listen({
        rank: o.rank,
        host: loop ? loopAddr(o.env.masterAddr) : '',
        token: o.env.token,
        shard,
        params: mine,
        optimizer: o.rank === 0 && o.servers === 1 ? probe : new o.optimizer(mine, o.optimizerOptions as never),
        staleness: o.staleness,
        timeoutMs: o.timeoutMs,
        workers,
      });
      const advertise = loop ? loopAddr(o.env.masterAddr) : process.env.FLOCKML_ADVERTISE_ADDR || hostname();
      await store.set(`ps/server/${o.rank}`, `${advertise}:${ps.#server.port}`);
      if (own && o.rank !== 0) await ps.#releaseStore();
      return ps;
    }
    try {
      const addrs = await Promise.all(specs.map((_, s) => store.get(`ps/server/${s}`, o.timeoutMs)));
      const opened = await Promise.allSettled(
        addrs.map((a, s) => {
          const host = a.slice(0, a.lastIndexOf(':')),
            port = Number(a.slice(a.lastIndexOf(':') + 1));
          return ServerLink.open(host, port, s, o.rank, shardBytes(specs[s]), o.timeoutMs);
        }),
      );
      // Links that did open are kept until now so that a failure closes them too.
      ps.#links = opened.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
      const failed = opened.find((r) => r.status === 'rejected');
      if (failed) throw failed.reason;
      await ps.#join(o.env.token);
    } catch (e) {
      for (const l of ps.#links) l.close();
      await ps.#releaseStore();
      throw e;
    }
    await ps.#releaseStore();
    return ps;
  }

  async #releaseStore(): Promise<void> {
    const s = this.#store;
    this.#store = null;
    await s?.close();
  }

  /**
   * Hello to every server (offering each a shared buffer of twice its shard's bytes; the name is
   * unlinked once it has answered), then join them all at the highest clock any proposes.
   */
  async #join(token: string): Promise<void> {
    const offers = this.#links.map((_, s) =>
      this.#transport !== 'tcp' ? createShared(this.rank, s, 2 * shardBytes(this.#specs[s])) : null,
    );
    let hellos: Awaited<ReturnType<ServerLink['request']>>[];
    try {
      hellos = await Promise.all(
        this.#links.map((l, s) => {
          const { digest, summary } = describeShard(this.#specs[s]);
          return l.request('create', { op: 'hello', token, rank: this.rank, shard: digest, summary, shm: offers[s]?.name ?? null });
        }),
      );
    } finally {
      for (const o of offers) if (o) unlinkShared(o.name);
    }
    this.#shared = hellos.map((h, s) => (h.header.shm === true ? (offers[s]?.buffer ?? null) : null));
    const unshared = this.#shared.indexOf(null);
    if (this.#transport === 'shm' && unshared >= 0)
      throw flockError(
        'ERR_IO',
        `${OP}.create on rank ${this.rank}`,
        offers[unshared]
          ? `FLOCKML_TRANSPORT=shm, but parameter server rank ${unshared} could not map this worker's shared memory (another host, or another /dev/shm?); FLOCKML_TRANSPORT=auto falls back to TCP`
          : 'FLOCKML_TRANSPORT=shm, but this process cannot create POSIX shared memory; FLOCKML_TRANSPORT=auto falls back to TCP',
      );
    hellos.forEach((h, s) => {
      if (h.header.staleness !== (this.staleness === Infinity ? null : this.staleness))
        throw argError(
          `${OP}.create on rank ${this.rank}`,
          `parameter server rank ${s} runs with staleness ${h.header.staleness ?? 'Infinity'}, this worker was given ${this.staleness}`,
        );
    });
    let clock = Math.max(...hellos.map((h) => h.header.clock as number));
    for (let attempt = 0; ; attempt++) {
      const replies = await Promise.all(this.#links.map((l) => l.request('create', { op: 'join', clock })));
      const retry = replies.filter((r) => r.header.retry !== undefined).map((r) => r.header.retry as number);
      if (retry.length === 0) break;
      if (attempt === 10)
        throw flockError('ERR_TIMEOUT', OP, `worker rank ${this.rank} could not agree on a starting clock with the servers`);
      clock = Math.max(clock, ...retry);
    }
    this.#clock = this.#stats.clock = clock;
  }

  /**
   * How this worker's gradients and parameters travel: 'shm' (shared memory with every server, all
   * on this host), 'tcp' (the sockets), 'shm+tcp' (some servers each way); null on a server.
   */
  get transport(): 'shm' | 'tcp' | 'shm+tcp' | null {
    if (this.isServer) return null;
    const n = this.#shared.filter((b) => b !== null).length;
    return n === this.#shared.length ? 'shm' : n === 0 ? 'tcp' : 'shm+tcp';
  }

  /** This worker's clock: the pushes it has made (from the clock it joined at). */
  get clock(): number {
    return this.#clock;
  }

  /** This worker's pushes and their staleness. */
  get stats(): WorkerStats {
    return { ...this.#stats, staleness: { ...this.#stats.staleness } };
  }

  #worker(op: string): string {
    const name = `${OP}.${op} on rank ${this.rank}`;
    if (this.isServer) throw argError(name, `rank ${this.rank} is a server (ranks 0-${this.servers - 1}); call serve()`);
    if (this.#closed) throw flockError('ERR_ARG', name, 'this worker has been closed');
    if (this.#busy) throw argError(name, 'the previous pull() or push() has not finished; await it first');
    return name;
  }

  /** How long a read may wait: a slow worker holds it until the server drops it after timeoutMs. */
  get #waitMs(): number {
    return 2 * this.#timeoutMs + 2_000;
  }

  /**
   * Reads the current parameters into the model, waiting (asynchronously) while this worker is more
   * than `staleness` clocks ahead of the slowest live worker. Resolves with the read's staleness.
   */
  async pull(): Promise<{ clock: number; staleness: number }> {
    this.#worker('pull');
    this.#busy = true;
    try {
      const clock = this.#clock;
      const replies = await Promise.all(
        this.#links.map((l, s) => l.request('pull', { op: 'pull', clock, shm: this.#shared[s] !== null }, [], this.#waitMs)),
      );
      let staleness = 0;
      noGrad(() => {
        replies.forEach((r, s) => {
          staleness = Math.max(staleness, r.header.staleness as number);
          const specs = this.#specs[s];
          const params = specs.map((spec) => this.#params[spec.index]);
          const shared = this.#shared[s];
          const bytes = shardBytes(specs);
          const values = tensorsOf(
            specs,
            specs.map(() => true),
            r.header.shm === true && shared ? sharedBytes(shared, bytes, bytes) : r.payload,
            params.map((p) => p.device),
          );
          values.forEach((t, i) => {
            copy_(params[i], t as Tensor);
            t?.dispose();
          });
        });
      });
      this.#readBase = clock - staleness;
      return { clock, staleness };
    } finally {
      this.#busy = false;
    }
  }

  /**
   * Sends the model's gradients (a parameter without one sends none) to the servers and advances this
   * worker's clock. The gradients are read when push() is called, so they may be zeroed right after.
   */
  async push(): Promise<PushStats> {
    const name = this.#worker('push');
    const base = this.#readBase;
    if (base === null) throw argError(name, 'pull() the parameters before the first push');
    const staleness = this.#clock - base;
    if (staleness > this.staleness)
      throw argError(
        name,
        `the parameters were read when the slowest worker was at clock ${base}, ${staleness} behind this worker's clock ${this.#clock} (staleness bound ${this.staleness}); pull() first`,
      );
    // Per server, its shard's gradients end to end, read (or written to its shared memory) now.
    const sends = this.#specs.map((shard, s) => {
      const present = shard.map((sp) => (this.#params[sp.index].grad ? 1 : 0));
      const grads = shard.flatMap((sp) => {
        const g = this.#params[sp.index].grad;
        if (g && (g.dtype !== sp.dtype || g.numel() * (sp.dtype === 'f64' ? 8 : 4) !== sp.bytes))
          throw argError(
            name,
            `the gradient of parameter ${sp.index} is ${g.dtype} [${g.shape.join(', ')}], the parameter ${sp.dtype} [${sp.shape.join(', ')}]`,
          );
        return g ? [g] : [];
      });
      const shared = this.#shared[s];
      return shared
        ? { present, shm: true, bytes: writeShared(grads, shared, 0).then(() => []) }
        : { present, shm: false, bytes: readFlat(grads) };
    });
    this.#busy = true;
    try {
      const clock = this.#clock;
      await Promise.all(
        this.#links.map(async (l, s) => {
          const { present, shm, bytes } = sends[s];
          return l.request('push', { op: 'push', clock, present, shm }, await bytes, this.#waitMs);
        }),
      );
      this.#clock = clock + 1;
      const st = this.#stats;
      st.clock = this.#clock;
      st.pushes++;
      st.staleness[staleness] = (st.staleness[staleness] ?? 0) + 1;
      st.maxStaleness = Math.max(st.maxStaleness, staleness);
      return { clock: this.#clock, staleness };
    } finally {
      this.#busy = false;
    }
  }

  /** Tells the servers this worker is done and disconnects. */
  async close(): Promise<void> {
    if (this.isServer || this.#closed) return;
    this.#closed = true;
    await Promise.allSettled(this.#links.map((l) => l.request('close', { op: 'bye' }, [], this.#timeoutMs)));
    for (const l of this.#links) l.close();
  }

  /**
   * Serves workers until every worker expected at the start has joined and none is live any more
   * (each left with close(), was lost or timed out); resolves with what this server saw.
   */
  async serve(): Promise<ServerStats> {
    if (!this.#server)
      throw argError(`${OP}.serve on rank ${this.rank}`, `rank ${this.rank} is a worker; servers are ranks 0-${this.servers - 1}`);
    const stats = await this.#server.done;
    await this.#releaseStore();
    return stats;
  }
}

const isLoopback = (h: string) => h === 'localhost' || h.startsWith('127.') || h === '::1';
const loopAddr = (master: string) => (master === '::1' ? '::1' : '127.0.0.1');
