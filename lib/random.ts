/** The global counter-based generator state: a seed and an offset that every draw advances. */

let seed = 0x5eed;
let offset = 0;

/** Seeds the generator: the same seed gives the same numbers on the CPU and on CUDA. */
export function manualSeed(s: number): void {
  if (!Number.isSafeInteger(s) || s < 0) throw new RangeError(`manualSeed: seed must be a non-negative safe integer, got ${s}`);
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
  seed = state.seed;
  offset = state.offset;
}
