/**
 * TCP key-value store for rendezvous, hosted by rank 0 (see store_server.ts): set/get/add/wait/
 * delete and a barrier on top. Every connection presents the shared token (FLOCKML_TOKEN); every
 * wait is bounded and fails with ERR_TIMEOUT rather than hanging.
 *
 *   const store = await Store.connect({ host: '127.0.0.1', port: 29500, token, isServer: rank === 0 });
 *   await store.set('addr/0', '127.0.0.1:41234');
 *   const addr = await store.get('addr/1');
 */
import { connect as tcpConnect, type Socket } from 'node:net';
import { encodeFrame, readFrames } from './frame';
import { StoreServer, STORE_SERVER_DEFAULTS } from './store_server';
import { checkOptions } from '../errors';
import { distError, intOption, stringOption } from './errors';

export interface StoreOptions {
  host: string;
  port: number;
  token: string;
  /** Host the server in this process (rank 0) before connecting to it. */
  isServer?: boolean;
  /** Default bound for connects and waits, ms (default 60 000). */
  timeoutMs?: number;
  /** Server only: connections held at once, authenticated or not; more are refused (default 1024). */
  maxConnections?: number;
  /** Server only: a connection that has not presented the token within this long is closed, ms (default 10 000). */
  authTimeoutMs?: number;
}

const STORE_OPTIONS = ['host', 'port', 'token', 'isServer', 'timeoutMs', 'maxConnections', 'authTimeoutMs'] as const;

type Pending = { resolve: (v: unknown) => void; reject: (e: Error) => void; timer: NodeJS.Timeout };

// Slack on the client-side timer so the server's ERR_TIMEOUT (with its list of missing keys)
// normally arrives first; the client timer is for a server that has gone silent.
const CLIENT_SLACK_MS = 2_000;

export class Store {
  readonly timeoutMs: number;
  #sock: Socket;
  #server: StoreServer | null;
  #next = 1;
  #pending = new Map<number, Pending>();
  #closed: Error | null = null;
  #barriers = new Map<string, number>();

  private constructor(sock: Socket, server: StoreServer | null, timeoutMs: number) {
    this.#sock = sock;
    this.#server = server;
    this.timeoutMs = timeoutMs;
    readFrames(
      sock,
      (msg) => this.#settle(msg),
      (why) => this.#fail(distError('ERR_STORE', `store: bad reply from the server: ${why}`)),
    );
    sock.on('close', () => this.#fail(distError('ERR_PEER_LOST', 'store: connection to the store on rank 0 was lost')));
    sock.on('error', () => undefined); // 'close' follows and reports it
  }

  static async connect(opts: StoreOptions): Promise<Store> {
    const op = 'Store.connect';
    if (opts === undefined) throw distError('ERR_ARG', `${op}: options { host, port, token } are required`);
    checkOptions(op, opts, STORE_OPTIONS);
    const host = stringOption(op, 'host', opts.host),
      port = intOption(op, 'port', opts.port, 0, 65535);
    const timeoutMs = intOption(op, 'timeoutMs', opts.timeoutMs ?? 60_000, 1);
    const server = {
      maxConnections: intOption(op, 'maxConnections', opts.maxConnections ?? STORE_SERVER_DEFAULTS.maxConnections, 1),
      authTimeoutMs: intOption(op, 'authTimeoutMs', opts.authTimeoutMs ?? STORE_SERVER_DEFAULTS.authTimeoutMs, 1),
    };
    if (opts.isServer !== undefined && typeof opts.isServer !== 'boolean') throw distError('ERR_ARG', `${op}: isServer must be a boolean`);
    if (typeof opts.token !== 'string' || opts.token.length === 0)
      throw distError('ERR_ARG', 'store: a non-empty token is required (set FLOCKML_TOKEN; `flockml launch` sets it for you)');
    const hosted = opts.isServer ? await StoreServer.listen(host, port, opts.token, server) : null;
    try {
      const sock = await dial(host, port, timeoutMs);
      const store = new Store(sock, hosted, timeoutMs);
      await store.#request({ op: 'hello', token: opts.token }, timeoutMs);
      return store;
    } catch (e) {
      await hosted?.close();
      throw e;
    }
  }

  set(key: string, value: string): Promise<void> {
    return this.#request({ op: 'set', key, value }) as Promise<void>;
  }

  /** The value of `key`, waiting up to `timeoutMs` for some rank to set it. */
  async get(key: string, timeoutMs = this.timeoutMs): Promise<string> {
    return (await this.#request({ op: 'get', key, timeoutMs }, timeoutMs)) as string;
  }

  /** Adds `amount` to the integer at `key` (0 when unset) and returns the new value. */
  async add(key: string, amount = 1): Promise<number> {
    return (await this.#request({ op: 'add', key, amount })) as number;
  }

  /** Resolves once every key is set; ERR_TIMEOUT after `timeoutMs`. */
  wait(keys: string[], timeoutMs = this.timeoutMs): Promise<void> {
    return this.#request({ op: 'wait', keys, timeoutMs }, timeoutMs) as Promise<void>;
  }

  /** Whether every key is set, without waiting. */
  async check(keys: string[]): Promise<boolean> {
    return (await this.#request({ op: 'check', keys })) as boolean;
  }

  /** Removes `key`; resolves with whether it existed. */
  async delete(key: string): Promise<boolean> {
    return (await this.#request({ op: 'delete', key })) as boolean;
  }

  /**
   * Returns once `worldSize` participants have called barrier with the same name (each name can
   * be used repeatedly: calls are counted per name).
   */
  async barrier(worldSize: number, name = 'default', timeoutMs = this.timeoutMs): Promise<void> {
    const round = (this.#barriers.get(name) ?? 0) + 1;
    this.#barriers.set(name, round);
    const base = `__barrier/${name}/${round}`;
    const arrived = await this.add(`${base}/count`, 1);
    if (arrived === worldSize) await this.set(`${base}/done`, '1');
    await this.wait([`${base}/done`], timeoutMs);
  }

  async close(): Promise<void> {
    this.#closed ??= distError('ERR_STORE', 'store: closed');
    this.#sock.destroy();
    await this.#server?.close();
    this.#server = null;
  }

  #request(msg: Record<string, unknown>, waitMs = 0): Promise<unknown> {
    if (this.#closed) return Promise.reject(this.#closed);
    const id = this.#next++;
    let frame: Buffer;
    try {
      frame = encodeFrame({ ...msg, id });
    } catch (e) {
      return Promise.reject(e);
    }
    return new Promise((resolve, reject) => {
      const limit = (waitMs || this.timeoutMs) + CLIENT_SLACK_MS;
      const timer = setTimeout(() => {
        this.#pending.delete(id);
        reject(distError('ERR_TIMEOUT', `store: ${String(msg.op)}: no reply from the store on rank 0 within ${limit} ms`));
      }, limit);
      this.#pending.set(id, { resolve, reject, timer });
      this.#sock.ref();
      this.#sock.write(frame);
    });
  }

  #settle(msg: Record<string, unknown>): void {
    // A reply to no request: the server refusing this connection (over its connection cap).
    if (msg.id === undefined && !msg.ok) {
      this.#fail(distError((msg.code as 'ERR_STORE') ?? 'ERR_STORE', String(msg.message)));
      return;
    }
    const p = this.#pending.get(msg.id as number);
    if (!p) return;
    this.#pending.delete(msg.id as number);
    clearTimeout(p.timer);
    // An idle store must not keep the process alive; only outstanding requests do.
    if (this.#pending.size === 0) this.#sock.unref();
    if (msg.ok) p.resolve(msg.value);
    else p.reject(distError((msg.code as 'ERR_STORE') ?? 'ERR_STORE', String(msg.message)));
  }

  #fail(e: Error): void {
    this.#closed ??= e;
    for (const p of this.#pending.values()) {
      clearTimeout(p.timer);
      p.reject(e);
    }
    this.#pending.clear();
  }
}

/** Connects, retrying while the server is not up yet (ranks start in any order). */
function dial(host: string, port: number, timeoutMs: number): Promise<Socket> {
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const attempt = () => {
      const sock = tcpConnect({ host, port });
      sock.once('connect', () => {
        sock.removeAllListeners('error');
        sock.setNoDelay(true);
        resolve(sock);
      });
      sock.once('error', (e: NodeJS.ErrnoException) => {
        sock.destroy();
        if (Date.now() < deadline && (e.code === 'ECONNREFUSED' || e.code === 'ECONNRESET' || e.code === 'ENOTFOUND'))
          setTimeout(attempt, 100);
        else reject(distError('ERR_TIMEOUT', `store: cannot reach the store at ${host}:${port} within ${timeoutMs} ms (${e.message})`));
      });
    };
    attempt();
  });
}
