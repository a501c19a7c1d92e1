/**
 * The parameter server's wire format: one frame is a 4-byte big-endian length of the rest, a
 * 4-byte length of a JSON header, the header, then raw tensor bytes (the payload). Tensor data
 * never passes through JSON. Both lengths are bounded before anything is buffered: a header by
 * MAX_HEADER_BYTES, a payload by what the receiver expects for its shard.
 */
import type { Socket } from 'node:net';

export const MAX_HEADER_BYTES = 64 << 10;

export type Header = Record<string, unknown>;

/** The bytes of one frame carrying `header` and `payload`. */
export function encode(header: Header, payload: readonly Buffer[] = []): Buffer {
  const head = Buffer.from(JSON.stringify(header), 'utf8');
  const body = payload.reduce((n, b) => n + b.length, 0);
  const lens = Buffer.alloc(8);
  lens.writeUInt32BE(4 + head.length + body, 0);
  lens.writeUInt32BE(head.length, 4);
  return Buffer.concat([lens, head, ...payload]);
}

export function send(sock: Socket, header: Header, payload: readonly Buffer[] = []): void {
  if (!sock.destroyed) sock.write(encode(header, payload));
}

/**
 * Calls `onFrame(header, payload)` for each complete frame on `sock`; `onBad(why)` then destroys the
 * socket on a frame over the limits or a header that is not a JSON object. `maxPayload()` is asked
 * as soon as a frame's length is known.
 */
export function readFrames(
  sock: Socket,
  onFrame: (header: Header, payload: Buffer) => void,
  onBad: (why: string) => void,
  maxPayload: () => number,
): void {
  let buf: Buffer = Buffer.alloc(0);
  // Chunks of a frame still arriving are joined once it is complete, not on every chunk.
  let parts: Buffer[] = [],
    held = 0,
    need = 0;
  const bad = (why: string) => {
    buf = Buffer.alloc(0);
    parts = [];
    held = need = 0;
    onBad(why);
    sock.destroy();
  };
  sock.on('data', (chunk: Buffer) => {
    if (held + chunk.length < need) {
      parts.push(chunk);
      held += chunk.length;
      return;
    }
    buf = parts.length ? Buffer.concat([...parts, chunk]) : buf.length ? Buffer.concat([buf, chunk]) : chunk;
    parts = [];
    held = need = 0;
    while (buf.length >= 4 && !sock.destroyed) {
      const len = buf.readUInt32BE(0),
        max = 4 + MAX_HEADER_BYTES + maxPayload();
      if (len > max || len < 4) return void bad(`a frame of ${len} bytes is outside the ${max}-byte limit`);
      if (buf.length < 8) return;
      const headLen = buf.readUInt32BE(4);
      if (headLen > MAX_HEADER_BYTES || headLen > len - 4) return void bad(`a frame header of ${headLen} bytes is too long`);
      if (len - 4 - headLen > max - 4 - MAX_HEADER_BYTES)
        return void bad(`a payload of ${len - 4 - headLen} bytes is outside the ${max - 4 - MAX_HEADER_BYTES}-byte limit`);
      if (buf.length < 4 + len) {
        parts = [buf];
        held = buf.length;
        need = 4 + len;
        buf = Buffer.alloc(0);
        return;
      }
      let header: unknown;
      try {
        header = JSON.parse(buf.subarray(8, 8 + headLen).toString('utf8'));
      } catch {
        return void bad('a frame header is not valid JSON');
      }
      if (header === null || typeof header !== 'object' || Array.isArray(header)) return void bad('a frame header is not a JSON object');
      // The payload is copied out so that it does not pin the (possibly large) receive buffer.
      const payload = Buffer.from(buf.subarray(8 + headLen, 4 + len));
      buf = buf.subarray(4 + len);
      onFrame(header as Header, payload);
    }
  });
}
