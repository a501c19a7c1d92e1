/** GPT-mini's batches: fixed-length windows of a token stream, in an order every framework can reproduce. */
import * as fl from '../../lib';

/** The window starts of step `s`: a fixed hash of (step, row), so every framework sees the same batches. */
export function batchStarts(step: number, batch: number, range: number): number[] {
  return Array.from({ length: batch }, (_, r) => Number((BigInt(step * batch + r) * 2654435761n) % BigInt(range)));
}

/** Inputs and next-token targets ([starts.length, t] i64) of the windows at `starts`. */
export function windows(tokens: Int32Array, starts: number[], t: number): [fl.Tensor, fl.Tensor] {
  const x = new BigInt64Array(starts.length * t);
  const y = new BigInt64Array(starts.length * t);
  starts.forEach((s, r) => {
    for (let j = 0; j < t; j++) {
      x[r * t + j] = BigInt(tokens[s + j]);
      y[r * t + j] = BigInt(tokens[s + j + 1]);
    }
  });
  return [fl.tensor(x, { shape: [starts.length, t] }), fl.tensor(y, { shape: [starts.length, t] })];
}

/**
 * Rank `rank`'s rows of a global batch of `batch` rows split over `world` ranks: equal contiguous
 * slices, so averaging the ranks' mean losses (DDP) gives the global batch's mean loss.
 */
export function rankSlice<T>(rows: T[], rank: number, world: number): T[] {
  if (rows.length % world !== 0) throw new RangeError(`the batch (${rows.length}) must divide evenly over ${world} ranks`);
  const per = rows.length / world;
  return rows.slice(rank * per, (rank + 1) * per);
}
