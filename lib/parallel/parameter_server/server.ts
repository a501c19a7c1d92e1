/**
 * One server rank of a ParameterServer: it holds a shard of the parameters and the optimizer over
 * them, and answers workers over TCP (framing in wire.ts), the tensor data through a worker's shared
 * memory when it offered one this server could map (shm.ts). Pushes are applied as they arrive when
 * staleness > 0; with staleness 0 the pushes of round c are averaged and applied once, when every
 * live worker has pushed c + 1 times. Reads wait on the clock table (clocks.ts). A worker whose
 * connection closes, or that is silent for timeoutMs while no read of its is waiting, is dropped.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Tensor } from '../../tensor';
import { tidy } from '../../memory';
import { noGrad } from '../../dispatch/grad_mode';
import { ClockTable } from './clocks';
import { type ParamSpec, describeShard, shardBytes } from './shard';
import { readFlat, tensorsOf } from './flat';
import { openShared, sharedBytes, writeShared } from './shm';
import { type Header, readFrames, send } from './wire';

/** What one server saw, returned by {@link ParameterServer.serve}. */
export interface ServerStats {
  rank: number;
  /** Gradients received. */
  pushes: number;
  /** Optimizer steps taken (one per push, or one per round with staleness 0). */
  updates: number;
  /** Staleness of each push received (clocks ahead of the slowest live worker at its read), counted. */
  staleness: Record<number, number>;
  maxStaleness: number;
  /** Worker ranks in the order they joined (a rank rejoining appears again). */
  joined: number[];
  /** Workers that said goodbye. */
  left: number[];
  /** Workers dropped, with why: 'lost' (connection closed), 'timed out', 'superseded', 'never joined'. */
  dropped: Array<{ rank: number; reason: string }>;
}

export interface ShardServerOptions {
  rank: number;
  host: string;
  token: string;
  shard: ParamSpec[];
  params: Tensor[];
  optimizer: { step(): void };
  staleness: number;
  timeoutMs: number;
  workers: number[];
}

interface Conn {
  sock: Socket;
  rank: number | null;
  joined: boolean;
  reading: number;
  heard: number;
  /** The slowest live clock when this worker last read (its staleness base). */
  readMin: number;
  /** The worker's shared memory (gradient slot, then parameter slot), when mapped. */
  shared: ArrayBuffer | null;
}

interface Round {
  sums: Array<Tensor | null>;
  pushes: number;
}

const digest = (s: string) => createHash('sha256').update(s).digest();

export class ShardServer {
  readonly stats: ServerStats;
  readonly done: Promise<ServerStats>;
  readonly #o: ShardServerOptions;
  readonly #server: Server;
  readonly #clocks: ClockTable;
  readonly #conns = new Set<Conn>();
  readonly #byRank = new Map<number, Conn>();
  readonly #reads: Array<{ conn: Conn; id: unknown; clock: number; shm: boolean }> = [];
  readonly #rounds = new Map<number, Round>();
  readonly #token: Buffer;
  readonly #bytes: number;
  #version = 0;
  #snapshot: { version: number; bytes: Promise<Buffer[]> } | null = null;
  #finish!: (s: ServerStats) => void;
  #timers: NodeJS.Timeout[] = [];
  #closed = false;

  private constructor(server: Server, o: ShardServerOptions) {
    this.#server = server;
    this.#o = o;
    this.#token = digest(o.token);
    this.#bytes = shardBytes(o.shard);
    this.#clocks = new ClockTable(o.staleness, o.workers);
    this.stats = { rank: o.rank, pushes: 0, updates: 0, staleness: {}, maxStaleness: 0, joined: [], left: [], dropped: [] };
    this.done = new Promise((resolve) => (this.#finish = resolve));
    server.on('connection', (s) => this.#accept(s));
    // Expected workers that have not joined within timeoutMs are given up on, so reads can start.
    const start = setTimeout(() => {
      for (const r of this.#clocks.missing) {
        this.#clocks.drop(r);
        this.stats.dropped.push({ rank: r, reason: 'never joined' });
      }
      this.#changed();
    }, o.timeoutMs);
    const idle = setInterval(() => this.#dropSilent(), Math.max(50, Math.min(1000, o.timeoutMs / 4)));
    this.#timers.push(start, idle);
  }

  static listen(o: ShardServerOptions): Promise<ShardServer> {
    const server = createServer();
    const s = new ShardServer(server, o);
    return new Promise((resolve, reject) => {
      server.once('error', (e) => {
        s.#close();
        reject(e);
      });
      server.listen(0, o.host, () => resolve(s));
    });
  }

  get port(): number {
    const a = this.#server.address();
    return typeof a === 'object' && a ? a.port : 0;
  }

  #accept(sock: Socket): void {
    sock.setNoDelay(true);
    const conn: Conn = { sock, rank: null, joined: false, reading: 0, heard: Date.now(), readMin: 0, shared: null };
    this.#conns.add(conn);
    sock.on('error', () => undefined); // 'close' follows
    sock.on('close', () => {
      this.#conns.delete(conn);
      this.#drop(conn, 'lost');
    });
    readFrames(
      sock,
      (h, payload) => {
        conn.heard = Date.now();
        try {
          this.#handle(conn, h, payload);
        } catch (e) {
          send(sock, { id: h.id, ok: false, code: (e as { code?: string }).code ?? 'ERR_ARG', message: (e as Error).message });
        }
      },
      () => undefined,
      () => (conn.rank === null ? 0 : this.#bytes),
    );
  }

  #fail(conn: Conn, id: unknown, code: string, message: string, close = false): void {
    send(conn.sock, { id, ok: false, code, message: `parameter server rank ${this.#o.rank}: ${message}` });
    if (close) conn.sock.end();
  }

  #handle(conn: Conn, h: Header, payload: Buffer): void {
    const { id, op } = h;
    if (conn.rank === null) {
      const given = typeof h.token === 'string' ? digest(h.token) : Buffer.alloc(32);
      if (op !== 'hello' || !timingSafeEqual(given, this.#token))
        return void this.#fail(conn, id, 'ERR_AUTH', 'connection refused: wrong or missing FLOCKML_TOKEN', true);
      const want = describeShard(this.#o.shard);
      if (h.shard !== want.digest)
        return void this.#fail(
          conn,
          id,
          'ERR_SHAPE',
          `the worker's model gives this server ${String(h.summary)}, it holds ${want.summary} (check that every rank builds the same model)`,
          true,
        );
      if (!Number.isInteger(h.rank) || (h.rank as number) < 0)
        return void this.#fail(conn, id, 'ERR_ARG', 'hello: rank must be an integer', true);
      conn.rank = h.rank as number;
      conn.shared = openShared(h.shm, 2 * this.#bytes);
      return void send(conn.sock, {
        id,
        ok: true,
        shm: conn.shared !== null,
        clock: this.#clocks.floor,
        staleness: Number.isFinite(this.#o.staleness) ? this.#o.staleness : null,
      });
    }
    const clock = h.clock as number;
    if (op !== 'bye' && (!Number.isInteger(clock) || clock < 0))
      return void this.#fail(conn, id, 'ERR_ARG', `${String(op)}: clock must be an integer`);
    switch (op) {
      case 'join':
        return void this.#join(conn, id, clock);
      case 'pull':
        if (!conn.joined) return void this.#fail(conn, id, 'ERR_ARG', 'pull before join');
        if (clock !== this.#clocks.live.get(conn.rank))
          return void this.#fail(
            conn,
            id,
            'ERR_ARG',
            `pull: worker rank ${conn.rank} is at clock ${this.#clocks.live.get(conn.rank)}, the pull says ${clock}`,
          );
        if (h.shm === true && !conn.shared) return void this.#fail(conn, id, 'ERR_ARG', 'pull: no shared memory was set up at hello');
        conn.reading++;
        this.#reads.push({ conn, id, clock, shm: h.shm === true });
        return void this.#answerReads();
      case 'push':
        return void this.#push(conn, id, clock, h.present, h.shm === true, payload);
      case 'bye':
        send(conn.sock, { id, ok: true });
        if (conn.joined) this.stats.left.push(conn.rank);
        this.#drop(conn, null);
        conn.sock.end();
        return;
      default:
        return void this.#fail(conn, id, 'ERR_ARG', `unknown request '${String(op)}'`);
    }
  }

  #join(conn: Conn, id: unknown, clock: number): void {
    const rank = conn.rank as number;
    const old = this.#byRank.get(rank);
    // A restarted worker supersedes its old connection, which is presumed dead.
    if (old && old !== conn) {
      this.#fail(old, null, 'ERR_PEER_LOST', `worker rank ${rank} connected again; this connection is superseded`, true);
      this.#drop(old, 'superseded', false);
    }
    if (!this.#clocks.join(rank, clock)) return void send(conn.sock, { id, ok: false, retry: this.#clocks.floor });
    conn.joined = true;
    conn.readMin = clock;
    this.#byRank.set(rank, conn);
    this.stats.joined.push(rank);
    send(conn.sock, { id, ok: true });
    this.#changed();
  }

  #push(conn: Conn, id: unknown, clock: number, present: unknown, shm: boolean, payload: Buffer): void {
    const rank = conn.rank as number;
    if (!conn.joined) return void this.#fail(conn, id, 'ERR_ARG', 'push before join');
    const mine = this.#clocks.live.get(rank);
    if (clock !== mine)
      return void this.#fail(conn, id, 'ERR_ARG', `push: worker rank ${rank} is at clock ${mine}, the push says ${clock}`);
    const shard = this.#o.shard;
    const has = Array.isArray(present) ? present : [];
    if (has.length !== shard.length || !has.every((x) => x === 0 || x === 1))
      return void this.#fail(conn, id, 'ERR_ARG', `push: 'present' must list 0 or 1 for each of the ${shard.length} parameters`);
    const want = shard.reduce((n, s, i) => n + (has[i] ? s.bytes : 0), 0);
    if (shm) {
      if (!conn.shared) return void this.#fail(conn, id, 'ERR_ARG', 'push: no shared memory was set up at hello');
      if (payload.length) return void this.#fail(conn, id, 'ERR_ARG', 'push: gradients both in shared memory and on the socket');
      // Copied out before the answer: the worker writes its slot again only after it.
      payload = sharedBytes(conn.shared, 0, want);
    }
    if (payload.length !== want) return void this.#fail(conn, id, 'ERR_SHAPE', `push: ${payload.length} gradient bytes, expected ${want}`);
    // Gradients become tensors on the parameters' device at once (views of one tensor made from the
    // received bytes): sums and steps run on its stream.
    const { params } = this.#o;
    const grads = tensorsOf(
      shard,
      has.map((x) => x === 1),
      payload,
      params.map((p) => p.device),
    );
    const staleness = clock - conn.readMin;
    this.stats.pushes++;
    this.stats.staleness[staleness] = (this.stats.staleness[staleness] ?? 0) + 1;
    this.stats.maxStaleness = Math.max(this.stats.maxStaleness, staleness);
    if (this.#o.staleness === 0) this.#accumulate(clock, grads);
    else this.#apply(grads);
    this.#clocks.tick(rank);
    send(conn.sock, { id, ok: true, staleness });
    this.#changed();
  }

  #accumulate(clock: number, grads: Array<Tensor | null>): void {
    let round = this.#rounds.get(clock);
    if (!round) {
      round = { sums: grads.map(() => null), pushes: 0 };
      this.#rounds.set(clock, round);
    }
    round.pushes++;
    grads.forEach((g, i) => {
      const sum = round.sums[i];
      if (!g) return;
      if (!sum) return void (round.sums[i] = g);
      round.sums[i] = noGrad(() => sum.add(g));
      sum.dispose();
      g.dispose();
    });
  }

  /** One optimizer step on the shard with these gradients (null: the parameter has none); disposes them. */
  #apply(grads: Array<Tensor | null>): void {
    const { params, optimizer } = this.#o;
    params.forEach((p, i) => (p.grad = grads[i]));
    tidy(() => optimizer.step());
    for (const p of params) p.grad = null;
    for (const t of grads) t?.dispose();
    this.#version++;
    this.stats.updates++;
  }

  /** After any clock change: finish the rounds every live worker is past, answer reads, maybe end. */
  #changed(): void {
    if (this.#o.staleness === 0) {
      const min = this.#clocks.min;
      for (const r of [...this.#rounds.keys()].sort((a, b) => a - b)) {
        if (r >= min) break;
        const round = this.#rounds.get(r) as Round;
        this.#rounds.delete(r);
        // The mean over the round's pushes (a parameter one worker sent no gradient for counts as zero there, as in DDP).
        this.#apply(
          round.sums.map((sum) => {
            if (!sum) return null;
            const mean = noGrad(() => sum.div(round.pushes));
            sum.dispose();
            return mean;
          }),
        );
      }
    }
    this.#answerReads();
    if (this.#clocks.finished && this.#reads.length === 0) this.#close();
  }

  #answerReads(): void {
    for (let i = 0; i < this.#reads.length; ) {
      const r = this.#reads[i];
      if (r.conn.sock.destroyed || !r.conn.joined) {
        this.#reads.splice(i, 1);
        continue;
      }
      if (!this.#clocks.mayRead(r.clock)) {
        i++;
        continue;
      }
      this.#reads.splice(i, 1);
      const min = this.#clocks.min;
      r.conn.readMin = min;
      const staleness = r.clock - min;
      const version = this.#version;
      const shared = r.shm ? r.conn.shared : null;
      // Into the worker's parameter slot (queued behind the steps so far), or one snapshot per version for the socket.
      const read = shared ? writeShared(this.#o.params, shared, this.#bytes).then(() => []) : this.#read();
      read.then(
        (bytes) => {
          r.conn.reading--;
          r.conn.heard = Date.now();
          send(r.conn.sock, { id: r.id, ok: true, version, staleness, shm: shared !== null }, bytes);
        },
        (e: Error) => this.#fail(r.conn, r.id, (e as { code?: string }).code ?? 'ERR_INTERNAL', e.message),
      );
    }
  }

  /** The shard's current bytes, read once per version however many workers ask. */
  #read(): Promise<Buffer[]> {
    if (this.#snapshot?.version !== this.#version)
      this.#snapshot = {
        version: this.#version,
        bytes: readFlat(this.#o.params),
      };
    return this.#snapshot.bytes;
  }

  /** Removes a worker; `settle` false when a join follows at once (nothing may finish in between). */
  #drop(conn: Conn, reason: string | null, settle = true): void {
    if (!conn.joined || conn.rank === null) return;
    conn.joined = false;
    if (this.#byRank.get(conn.rank) === conn) {
      this.#byRank.delete(conn.rank);
      this.#clocks.drop(conn.rank);
    }
    if (reason) this.stats.dropped.push({ rank: conn.rank, reason });
    if (settle) this.#changed();
  }

  #dropSilent(): void {
    const now = Date.now();
    for (const c of this.#conns)
      if (c.joined && c.reading === 0 && now - c.heard > this.#o.timeoutMs) {
        this.#fail(c, null, 'ERR_TIMEOUT', `worker rank ${c.rank} was silent for ${this.#o.timeoutMs} ms and is dropped`, true);
        this.#drop(c, 'timed out');
        c.sock.destroy();
      }
  }

  #close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const t of this.#timers) clearTimeout(t);
    this.#timers = [];
    this.#server.close();
    for (const c of this.#conns) c.sock.end();
    this.#finish(this.stats);
  }
}
