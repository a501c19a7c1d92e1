/**
 * Length-prefixed JSON frames for the store's wire protocol: 4-byte big-endian length, then UTF-8
 * JSON. Lengths are bounded so a stray or hostile peer cannot make us buffer without limit.
 */
import type { Socket } from 'node:net';
import { distError } from './errors';

export const MAX_FRAME_BYTES = 4 << 20;

export function writeFrame(sock: Socket, msg: unknown): void {
  sock.write(encodeFrame(msg));
}

/** The bytes of one frame; ERR_ARG when the message exceeds MAX_FRAME_BYTES. */
export function encodeFrame(msg: unknown): Buffer {
  const body = Buffer.from(JSON.stringify(msg), 'utf8');
  if (body.length > MAX_FRAME_BYTES)
    throw distError('ERR_ARG', `store: message of ${body.length} bytes exceeds the ${MAX_FRAME_BYTES}-byte limit`);
  const head = Buffer.alloc(4);
  head.writeUInt32BE(body.length, 0);
  return Buffer.concat([head, body]);
}

/**
 * Calls `onFrame` for each complete frame on `sock`; `onBad` (then destroys) on an oversized or
 * malformed one. `limit()` is asked for every frame's length as soon as its 4-byte header is in,
 * so a frame over the limit is refused before any of its body is buffered.
 */
export function readFrames(
  sock: Socket,
  onFrame: (msg: Record<string, unknown>) => void,
  onBad: (why: string) => void,
  limit: () => number = () => MAX_FRAME_BYTES,
): void {
  let buf: Buffer = Buffer.alloc(0);
  sock.on('data', (chunk: Buffer) => {
    buf = buf.length ? Buffer.concat([buf, chunk]) : chunk;
    while (buf.length >= 4 && !sock.destroyed) {
      const len = buf.readUInt32BE(0),
        max = limit();
      if (len > max) {
        onBad(`a frame of ${len} bytes exceeds the ${max}-byte limit`);
        buf = Buffer.alloc(0);
        sock.destroy();
        return;
      }
      if (buf.length < 4 + len) return;
      const body = buf.subarray(4, 4 + len);
      buf = buf.subarray(4 + len);
      let msg: unknown;
      try {
        msg = JSON.parse(body.toString('utf8'));
      } catch {
        onBad('a frame is not valid JSON');
        sock.destroy();
        return;
      }
      if (msg === null || typeof msg !== 'object') {
        onBad('a frame is not a JSON object');
        sock.destroy();
        return;
      }
      onFrame(msg as Record<string, unknown>);
    }
  });
}
