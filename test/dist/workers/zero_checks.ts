/** What the ZeRO workers (zero.ts, zero3.ts) check with besides close and values (test/helpers/): the loss, error codes and live bytes. */
import * as fl from '../../../lib/index';
import { device } from './backend';

export const loss = (out: fl.Tensor, y: fl.Tensor) => out.sub(y).square().mean();

export async function expectCode(what: string, code: string, fn: () => unknown): Promise<void> {
  try {
    await fn();
  } catch (e) {
    if ((e as { code?: string }).code === code) return;
    throw new Error(`${what}: expected ${code}, got ${(e as Error).message}`);
  }
  throw new Error(`${what}: expected ${code}, nothing was thrown`);
}

/** Bytes live on this worker's device (the CPU, or its GPU under nccl) once the work queued so far (which keeps what it reads alive) has run. */
export async function bytes(): Promise<number> {
  // Tensors only the garbage collector frees (ZeRO's autograd closures) would otherwise be
  // finalized at random times in between two readings (the tests start workers with --expose-gc).
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run with --expose-gc');
  for (let i = 0; i < 3; i++) {
    gc();
    await new Promise((r) => setTimeout(r, 10));
  }
  await fl.sync(device);
  return fl.memory()[device].bytes;
}
