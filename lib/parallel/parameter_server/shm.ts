/**
 * Shared memory between a worker and a server on one host: the worker creates one POSIX object per
 * server (exclusively, mode 0600, named with random bytes), sends its name at hello, and unlinks it
 * as soon as the server has answered; the server maps it when it can (another host, or another
 * /dev/shm, cannot) and says so. The first half is the worker's gradient slot, the second its
 * parameter slot: a push writes its gradients there and sends only the header; a pull's answer
 * copies the shard's current values there. A worker has at most one request outstanding, so
 * neither side writes a slot the other may still be reading. FLOCKML_TRANSPORT=tcp keeps
 * everything on the socket.
 */
import { randomBytes } from 'node:crypto';
import type { Tensor } from '../../tensor';
import { native } from '../../native';

/** A new shared buffer of `bytes` for this worker's link to `server`, or null where shared memory cannot be made. */
export function createShared(rank: number, server: number, bytes: number): { name: string; buffer: ArrayBuffer } | null {
  const name = `/flockml-ps-${process.pid}-${rank}-${server}-${randomBytes(8).toString('hex')}`;
  try {
    return { name, buffer: native.psShmCreate(name, bytes) };
  } catch {
    return null;
  }
}

/** The worker's buffer `name` mapped by a server expecting `bytes`, or null when it cannot be. */
export function openShared(name: unknown, bytes: number): ArrayBuffer | null {
  if (typeof name !== 'string' || bytes === 0) return null;
  try {
    return native.psShmOpen(name, bytes);
  } catch {
    return null;
  }
}

export function unlinkShared(name: string): void {
  native.psShmUnlink(name);
}

/** Writes `tensors` end to end into `buffer` from `offset` (queued now: they may change as soon as this returns). */
export async function writeShared(tensors: readonly Tensor[], buffer: ArrayBuffer, offset: number): Promise<void> {
  // One native call (one completion) per device; the offsets follow the tensors' order.
  let at = offset,
    start = 0;
  const writes: Promise<unknown>[] = [];
  for (let i = 1; i <= tensors.length; i++)
    if (i === tensors.length || tensors[i].device !== tensors[start].device) {
      const run = tensors.slice(start, i);
      writes.push(
        native.psReadInto(
          run.map((t) => t.handle),
          buffer,
          at,
        ),
      );
      for (const t of run) at += t.numel() * (t.dtype === 'f64' ? 8 : 4);
      start = i;
    }
  await Promise.all(writes);
}

/** `bytes` bytes of `buffer` from `offset`, as a Buffer (no copy). */
export const sharedBytes = (buffer: ArrayBuffer, offset: number, bytes: number): Buffer => Buffer.from(buffer, offset, bytes);
