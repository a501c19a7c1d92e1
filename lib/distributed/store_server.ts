/**
 * The rendezvous store's server, hosted by rank 0: a key-value map with counters and waits. Every
 * connection must first prove the shared token; anything else is refused and closed.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { timingSafeEqual, createHash } from 'node:crypto';
import { readFrames, writeFrame } from './frame';

const HELLO_TIMEOUT_MS = 10_000;
const MAX_KEY_BYTES = 4096;

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

  private constructor(server: Server, token: string) {
    this.#server = server;
    this.#token = digest(token);
  }

  /** Listens on host:port (port 0 picks a free one). */
  static listen(host: string, port: number, token: string): Promise<StoreServer> {
    const server = createServer();
    const store = new StoreServer(server, token);
    server.on('connection', (s) => store.#accept(s));
    return new Promise((resolve, reject) => {
      server.once('error', (e: NodeJS.ErrnoException) =>
        reject(Object.assign(new Error(`store: cannot listen on ${host}:${port}: ${e.message}`), { code: e.code === 'EADDRINUSE' ? 'ERR_ARG' : 'ERR_STORE' })),
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

  #accept(sock: Socket): void {
    sock.unref();  // client requests keep their own processes alive; the server follows them
    this.#sockets.add(sock);
    sock.on('close', () => this.#sockets.delete(sock));
    sock.on('error', () => sock.destroy());
    let authed = false;
    const hello = setTimeout(() => sock.destroy(), HELLO_TIMEOUT_MS);
    readFrames(
      sock,
      (msg) => {
        const id = msg.id;
        if (!authed) {
          clearTimeout(hello);
          const given = typeof msg.token === 'string' ? digest(msg.token) : Buffer.alloc(32);
          if (msg.op !== 'hello' || !timingSafeEqual(given, this.#token)) {
            writeFrame(sock, { id, ok: false, code: 'ERR_AUTH', message: 'store: connection refused: wrong or missing FLOCKML_TOKEN' });
            sock.end();
            return;
          }
          authed = true;
          writeFrame(sock, { id, ok: true });
          return;
        }
        this.#handle(sock, msg);
      },
      () => undefined,
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
            else bad('ERR_TIMEOUT', `store: ${op}: keys not set within ${timeoutMs} ms: ${w.keys.filter((k) => !this.#data.has(k)).join(', ')}`);
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
