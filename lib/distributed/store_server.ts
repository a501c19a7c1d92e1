/**
 * The rendezvous store's server, hosted by rank 0: a key-value map with counters and waits. Every
 * connection must first prove the shared token; anything else is refused and closed. Until it has,
 * a connection costs little: its frames may be at most PRE_AUTH_FRAME_BYTES (a hello is under
 * 200), it is closed when it has not said hello within `authTimeoutMs`, and connections beyond
 * `maxConnections` are refused at once, so strangers on the port cannot grow rank 0's memory.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { timingSafeEqual, createHash } from 'node:crypto';
import { encodeFrame, readFrames, writeFrame, MAX_FRAME_BYTES } from './frame';
import { distError } from './errors';

const MAX_KEY_BYTES = 4096;
const PRE_AUTH_FRAME_BYTES = 4096;

export interface StoreServerOptions {
  /** Connections held at once, authenticated or not; more are refused (default 1024). */
  maxConnections?: number;
  /** A connection that has not presented the token within this long is closed, ms (default 10 000). */
  authTimeoutMs?: number;
}

export const STORE_SERVER_DEFAULTS = { maxConnections: 1024, authTimeoutMs: 10_000 } as const;

interface Waiter {
  keys: string[];
  reply: (ok: boolean) => void;
}

function digest(s: string): Buffer {
  return createHash('sha256').update(s).digest();
}

export class StoreServer {
  readonly #server: Server;
  readonly #data = new Map<string, string>();
  readonly #waiters = new Set<Waiter>();
  readonly #sockets = new Set<Socket>();
  readonly #token: Buffer;
  readonly #maxConnections: number;
  readonly #authTimeoutMs: number;

  private constructor(server: Server, token: string, o: Required<StoreServerOptions>) {
    this.#server = server;
    this.#token = digest(token);
    this.#maxConnections = o.maxConnections;
    this.#authTimeoutMs = o.authTimeoutMs;
  }

  /** Listens on host:port (port 0 picks a free one). Options are validated by the caller (Store.connect). */
  static listen(host: string, port: number, token: string, options: StoreServerOptions = {}): Promise<StoreServer> {
    const server = createServer();
    const store = new StoreServer(server, token, { ...STORE_SERVER_DEFAULTS, ...options });
    server.on('connection', (s) => store.#accept(s));
    return new Promise((resolve, reject) => {
      server.once('error', (e: NodeJS.ErrnoException) =>
        reject(distError(e.code === 'EADDRINUSE' ? 'ERR_ARG' : 'ERR_STORE', `store: cannot listen on ${host}:${port}: ${e.message}`)),
      );
      server.listen(port, host, () => {
        server.unref();
        resolve(store);
      });
    });
  }

  get port(): number {
    const a = this.#server.address();
    return typeof a === 'object' && a ? a.port : 0;
  }

  /**
   * Stops accepting, then lets connected ranks finish (their last replies and requests) until
   * they disconnect or `lingerMs` passes: rank 0 is often done first, and must not pull the store
   * from under the others.
   */
  async close(lingerMs = 10_000): Promise<void> {
    const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    const deadline = Date.now() + lingerMs;
    while (this.#sockets.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    for (const s of this.#sockets) s.destroy();
    for (const w of this.#waiters) w.reply(false);
    this.#waiters.clear();
    await closed;
  }

  /** Connections held now (authenticated or not). */
  get connections(): number {
    return this.#sockets.size;
  }

  #accept(sock: Socket): void {
    sock.unref(); // client requests keep their own processes alive; the server follows them
    sock.on('error', () => sock.destroy());
    if (this.#sockets.size >= this.#maxConnections) {
      // Nothing of it is read: its bytes stay in the kernel until it goes.
      const refusal = {
        ok: false,
        code: 'ERR_STORE',
        message: `store: connection refused: the store already holds ${this.#sockets.size} connections (maxConnections)`,
      };
      sock.end(encodeFrame(refusal));
      setTimeout(() => sock.destroy(), 1000).unref();
      return;
    }
    this.#sockets.add(sock);
    sock.on('close', () => this.#sockets.delete(sock));
    let authed = false,
      refused = false;
    const hello = setTimeout(() => sock.destroy(), this.#authTimeoutMs);
    hello.unref();
    sock.on('close', () => clearTimeout(hello));
    readFrames(
      sock,
      (msg) => {
        if (refused) return;
        const id = msg.id;
        if (!authed) {
          clearTimeout(hello);
          const given = typeof msg.token === 'string' ? digest(msg.token) : Buffer.alloc(32);
          if (msg.op !== 'hello' || !timingSafeEqual(given, this.#token)) {
            refused = true;
            writeFrame(sock, { id, ok: false, code: 'ERR_AUTH', message: 'store: connection refused: wrong or missing FLOCKML_TOKEN' });
            sock.end();
            setTimeout(() => sock.destroy(), 1000).unref();
            return;
          }
          authed = true;
          writeFrame(sock, { id, ok: true });
          return;
        }
        this.#handle(sock, msg);
      },
      () => undefined,
      () => (authed ? MAX_FRAME_BYTES : PRE_AUTH_FRAME_BYTES),
    );
  }

  #handle(sock: Socket, msg: Record<string, unknown>): void {
    const { id, op } = msg;
    const ok = (value?: unknown) => !sock.destroyed && writeFrame(sock, { id, ok: true, value });
    const bad = (code: string, message: string) => !sock.destroyed && writeFrame(sock, { id, ok: false, code, message });
    const keys = Array.isArray(msg.keys) ? msg.keys : [msg.key];
    if (!keys.every((k) => typeof k === 'string' && Buffer.byteLength(k) <= MAX_KEY_BYTES))
      return void bad('ERR_ARG', `store: ${String(op)}: keys must be strings of at most ${MAX_KEY_BYTES} bytes`);
    const key = keys[0] as string;
    switch (op) {
      case 'set':
        if (typeof msg.value !== 'string') return void bad('ERR_ARG', 'store: set: value must be a string');
        this.#data.set(key, msg.value);
        this.#wake();
        return void ok();
      case 'add': {
        const n = Number(this.#data.get(key) ?? '0') + Number(msg.amount ?? 1);
        this.#data.set(key, String(n));
        this.#wake();
        return void ok(n);
      }
      case 'delete':
        return void ok(this.#data.delete(key));
      case 'check':
        return void ok(keys.every((k) => this.#data.has(k as string)));
      case 'get':
      case 'wait': {
        const timeoutMs = Math.max(0, Number(msg.timeoutMs ?? 0));
        const reply = () => (op === 'get' ? ok(this.#data.get(key)) : ok());
        if (keys.every((k) => this.#data.has(k as string))) return void reply();
        const w: Waiter = {
          keys: keys as string[],
          reply: (ready) => {
            clearTimeout(timer);
            this.#waiters.delete(w);
            if (ready) reply();
            else
              bad(
                'ERR_TIMEOUT',
                `store: ${op}: keys not set within ${timeoutMs} ms: ${w.keys.filter((k) => !this.#data.has(k)).join(', ')}`,
              );
          },
        };
        const timer = setTimeout(() => w.reply(false), timeoutMs);
        this.#waiters.add(w);
        sock.once('close', () => {
          clearTimeout(timer);
          this.#waiters.delete(w);
        });
        return;
      }
      default:
        return void bad('ERR_ARG', `store: unknown op '${String(op)}'`);
    }
  }

  #wake(): void {
    for (const w of [...this.#waiters]) if (w.keys.every((k) => this.#data.has(k))) w.reply(true);
  }
}
