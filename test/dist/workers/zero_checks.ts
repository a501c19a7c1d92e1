/** What the ZeRO workers (zero.ts, zero3.ts) check with: the loss, values read back, closeness and error codes. */
import type * as fl from '../../../lib/index';

export const loss = (out: fl.Tensor, y: fl.Tensor) => out.sub(y).square().mean();

export async function values(ts: fl.Tensor[]): Promise<number[]> {
  const out: number[] = [];
  for (const t of ts) out.push(...Array.from(await t.data(), Number));
  return out;
}

export function close(what: string, got: number[], want: number[], tol = 1e-4): void {
  if (got.length !== want.length) throw new Error(`${what}: ${got.length} values, expected ${want.length}`);
  for (let i = 0; i < want.length; i++)
    if (!(Math.abs(got[i] - want[i]) <= tol + tol * Math.abs(want[i])))
      throw new Error(`${what}: element ${i} is ${got[i]}, expected ${want[i]}`);
}

export async function expectCode(what: string, code: string, fn: () => unknown): Promise<void> {
  try {
    await fn();
  } catch (e) {
    if ((e as { code?: string }).code === code) return;
    throw new Error(`${what}: expected ${code}, got ${(e as Error).message}`);
  }
  throw new Error(`${what}: expected ${code}, nothing was thrown`);
}
