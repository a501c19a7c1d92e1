/**
 * The parameter server's wire format: one frame is a 4-byte big-endian length of the rest, a
 * 4-byte length of a JSON header, the header, then raw tensor bytes (the payload). Tensor data
 * never passes through JSON. Both lengths are bounded before anything is buffered: a header by
 * MAX_HEADER_BYTES, a payload by what the receiver expects for its shard.
 */
import type { Socket } from 'node:net';

const MAX_HEADER_BYTES = 64 << 10;

export type Header = Record<string, unknown>;

/** The length words and header of a frame; the header is padded with spaces so the payload starts 8-byte aligned. */
function head(header: Header, body: number): Buffer {
  const json = JSON.stringify(header);
  const text = json.padEnd(json.length + ((8 - ((8 + Buffer.byteLength(json)) % 8)) % 8), ' ');
  const out = Buffer.allocUnsafe(8 + Buffer.byteLength(text));
  out.writeUInt32BE(out.length - 4 + body, 0);
  out.writeUInt32BE(out.length - 8, 4);
  out.write(text, 8, 'utf8');
  return out;
}

/** The bytes of one frame carrying `header` and `payload`. */
export function encode(header: Header, payload: readonly Buffer[] = []): Buffer {
  return Buffer.concat([
    head(
      header,
      payload.reduce((n, b) => n + b.length, 0),
    ),
    ...payload,
  ]);
}

/** Writes a frame; the payload's buffers go to the socket as they are (one writev, no joining copy) and must not change after. */
export function send(sock: Socket, header: Header, payload: readonly Buffer[] = []): void {
  if (sock.destroyed) return;
  const first = head(
    header,
    payload.reduce((n, b) => n + b.length, 0),
  );
  if (payload.length === 0) return void sock.write(first);
  sock.cork();
  sock.write(first);
  for (const b of payload) sock.write(b);
  sock.uncork();
}

/**
 * Calls `onFrame(header, payload)` for each complete frame on `sock`; `onBad(why)` then destroys the
 * socket on a frame over the limits or a header that is not a JSON object. `maxPayload()` is asked
 * as soon as a frame's length is known. A frame that spans chunks is copied once, into a buffer of
 * its own size allocated when its length is known (checked first); the payload handed on is a view
 * of it, 8-byte aligned. A payload that came within one chunk is copied out of it.
 */
export function readFrames(
  sock: Socket,
  onFrame: (header: Header, payload: Buffer) => void,
  onBad: (why: string) => void,
  maxPayload: () => number,
): void {
  const none = Buffer.alloc(0);
  /** Bytes of the next frame's first 8 that arrived without the rest. */
  let rest: Buffer = none;
  /** The frame being filled, and how much of it is. */
  let frame: Buffer | null = null,
    filled = 0;
  const bad = (why: string) => {
    rest = none;
    frame = null;
    onBad(why);
    sock.destroy();
  };
  /** Hands on one whole frame (its checks passed); false when the socket went away. */
  const deliver = (f: Buffer, own: boolean): boolean => {
    const headLen = f.readUInt32BE(4);
    let header: unknown;
    try {
      header = JSON.parse(f.subarray(8, 8 + headLen).toString('utf8'));
    } catch {
      bad('a frame header is not valid JSON');
      return false;
    }
    if (header === null || typeof header !== 'object' || Array.isArray(header)) {
      bad('a frame header is not a JSON object');
      return false;
    }
    // A payload within a chunk is copied out so that it does not pin the (possibly large) chunk.
    const body = f.subarray(8 + headLen);
    onFrame(header as Header, own || body.length === 0 ? body : Buffer.from(body));
    return !sock.destroyed;
  };
  sock.on('data', (chunk: Buffer) => {
    let buf = chunk;
    if (frame) {
      const n = Math.min(frame.length - filled, chunk.length);
      chunk.copy(frame, filled, 0, n);
      filled += n;
      if (filled < frame.length) return;
      const f = frame;
      frame = null;
      if (!deliver(f, true)) return;
      buf = chunk.subarray(n);
    }
    if (rest.length) {
      buf = Buffer.concat([rest, buf]);
      rest = none;
    }
    while (buf.length >= 4 && !sock.destroyed) {
      const len = buf.readUInt32BE(0),
        max = 4 + MAX_HEADER_BYTES + maxPayload();
      if (len > max || len < 4) return void bad(`a frame of ${len} bytes is outside the ${max}-byte limit`);
      if (buf.length < 8) break;
      const headLen = buf.readUInt32BE(4);
      if (headLen > MAX_HEADER_BYTES || headLen > len - 4) return void bad(`a frame header of ${headLen} bytes is too long`);
      if (len - 4 - headLen > max - 4 - MAX_HEADER_BYTES)
        return void bad(`a payload of ${len - 4 - headLen} bytes is outside the ${max - 4 - MAX_HEADER_BYTES}-byte limit`);
      if (buf.length < 4 + len) {
        frame = Buffer.allocUnsafe(4 + len);
        buf.copy(frame, 0);
        filled = buf.length;
        return;
      }
      if (!deliver(buf.subarray(0, 4 + len), false)) return;
      buf = buf.subarray(4 + len);
    }
    if (buf.length && !sock.destroyed) rest = Buffer.from(buf);
  });
}
