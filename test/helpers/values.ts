/**
 * Tensors read back as plain numbers, for the tests and the rank workers of test/dist; they compare
 * the numbers with close (./reference.ts).
 */
import type { Tensor } from '../../lib/index';

/** The values of `t` as numbers, read synchronously from any device: bf16/f16 through f32, i64 rounded as Number(), bool as 0/1. */
export function values(t: Tensor): number[] {
  return Array.from(t.dataSync() as ArrayLike<number | bigint>, Number);
}

/** {@link values} through `data()` (once the queued work has run), of several tensors concatenated in order. */
export async function valuesAsync(ts: Tensor | readonly Tensor[]): Promise<number[]> {
  const out: number[] = [];
  // One push per element: spreading a tensor of a million values into push() overflows the stack.
  for (const t of Array.isArray(ts) ? ts : [ts as Tensor]) for (const v of await t.data()) out.push(Number(v));
  return out;
}

/** The largest |a[i] − b[i]|: NaN when any pair holds a NaN, so a `< tol` check on it fails. */
export function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) throw new Error(`maxAbsDiff: ${a.length} values against ${b.length}`);
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]));
  return worst;
}
