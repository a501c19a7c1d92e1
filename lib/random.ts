/** The global counter-based generator state: a seed and an offset that every draw advances. */
import { argError, describe, outOfRange } from './errors';

let seed = 0x5eed;
let offset = 0;

/** Seeds the generator: the same seed gives the same numbers on the CPU and on CUDA. */
export function manualSeed(s: number): void {
  if (typeof s !== 'number') throw argError('manualSeed', `seed must be a non-negative safe integer, got ${describe(s)}`);
  if (!Number.isSafeInteger(s) || s < 0) throw outOfRange('manualSeed', `seed must be a non-negative safe integer, got ${s}`);
  seed = s;
  offset = 0;
}

/** Reserves Philox counters for `numel` values and returns where they start. */
export function nextDraw(numel: number): { seed: number; offset: number } {
  const at = offset;
  offset += Math.ceil(numel / 4);
  return { seed, offset: at };
}

export function getRngState(): { seed: number; offset: number } {
  return { seed, offset };
}

export function setRngState(state: { seed: number; offset: number }): void {
  if (
    state === null ||
    typeof state !== 'object' ||
    !Number.isSafeInteger(state.seed) ||
    state.seed < 0 ||
    !Number.isSafeInteger(state.offset) ||
    state.offset < 0
  )
    throw argError('setRngState', `expected { seed, offset } of non-negative safe integers (from getRngState), got ${describe(state)}`);
  seed = state.seed;
  offset = state.offset;
}
