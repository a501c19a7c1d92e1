/**
 * A worker's connection to one server rank: requests carry an id, replies settle them. Every
 * request is bounded by a timer; a connection that closes fails every request, then and later,
 * with ERR_PEER_LOST naming the server rank.
 */
import { connect, type Socket } from 'node:net';
import { flockError, type ErrorCode } from '../../errors';
import { type Header, readFrames, send } from './wire';

export interface Reply {
  header: Header;
  payload: Buffer;
}

type Pending = { resolve: (r: Reply) => void; reject: (e: Error) => void; timer: NodeJS.Timeout; op: string };

export class ServerLink {
  readonly server: number;
  readonly #sock: Socket;
  readonly #me: number;
  readonly #pending = new Map<number, Pending>();
  #next = 1;
  #lost: { code: ErrorCode; detail: string } | null = null;

  private constructor(sock: Socket, server: number, me: number, maxPayload: number) {
    this.#sock = sock;
    this.server = server;
    this.#me = me;
    readFrames(
      sock,
      (header, payload) => this.#settle(header, payload),
      (why) => this.#fail('ERR_PEER_LOST', `sent a bad frame (${why})`),
      () => maxPayload,
    );
    sock.on('close', () => this.#fail('ERR_PEER_LOST', 'was lost (its connection closed)'));
    sock.on('error', () => undefined);
  }

  /** Connects to server rank `server` at host:port within `timeoutMs`. */
  static open(host: string, port: number, server: number, me: number, maxPayload: number, timeoutMs: number): Promise<ServerLink> {
    return new Promise((resolve, reject) => {
      const sock = connect({ host, port });
      const timer = setTimeout(() => {
        sock.destroy();
        reject(flockError('ERR_TIMEOUT', 'ParameterServer', `cannot reach parameter server rank ${server} at ${host}:${port}`));
      }, timeoutMs);
      sock.once('connect', () => {
        clearTimeout(timer);
        sock.removeAllListeners('error');
        sock.setNoDelay(true);
        resolve(new ServerLink(sock, server, me, maxPayload));
      });
      sock.once('error', (e) => {
        clearTimeout(timer);
        reject(
          flockError('ERR_PEER_LOST', 'ParameterServer', `cannot reach parameter server rank ${server} at ${host}:${port}: ${e.message}`),
        );
      });
    });
  }

  /** Sends a request and resolves with the reply; a reply with ok: false rejects with its code. */
  request(op: string, header: Header, payload: readonly Buffer[] = [], timeoutMs = 60_000): Promise<Reply> {
    const name = `ParameterServer.${op} on rank ${this.#me}`;
    if (this.#lost) return Promise.reject(flockError(this.#lost.code, name, this.#lost.detail));
    const id = this.#next++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#pending.delete(id);
        reject(flockError('ERR_TIMEOUT', name, `parameter server rank ${this.server} did not answer within ${timeoutMs} ms`));
      }, timeoutMs);
      this.#pending.set(id, { resolve, reject, timer, op: name });
      send(this.#sock, { ...header, id }, payload);
    });
  }

  close(): void {
    this.#lost ??= { code: 'ERR_PEER_LOST', detail: `the connection to parameter server rank ${this.server} was closed by this worker` };
    this.#sock.destroy();
  }

  #settle(header: Header, payload: Buffer): void {
    const p = this.#pending.get(header.id as number);
    if (!p) {
      // A message to no request: the server refusing or dropping this worker.
      if (header.ok === false) this.#fail((header.code as ErrorCode) ?? 'ERR_PEER_LOST', String(header.message), true);
      return;
    }
    this.#pending.delete(header.id as number);
    clearTimeout(p.timer);
    if (header.ok !== false) return void p.resolve({ header, payload });
    if (header.retry !== undefined) return void p.resolve({ header, payload });
    p.reject(flockError((header.code as ErrorCode) ?? 'ERR_INTERNAL', p.op, String(header.message)));
  }

  #fail(code: ErrorCode, what: string, verbatim = false): void {
    if (this.#lost) return;
    const detail = verbatim ? what : `parameter server rank ${this.server} ${what}`;
    this.#lost = { code, detail };
    for (const p of this.#pending.values()) {
      clearTimeout(p.timer);
      p.reject(flockError(code, p.op, detail));
    }
    this.#pending.clear();
    this.#sock.destroy();
  }
}
