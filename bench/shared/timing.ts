/** Timing helpers the benches share. */
import * as fl from '../../lib/index';

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

/** Median ms of `step` over `steps` runs after 3 warm-up runs, each ended by a device sync. */
export async function timeSteps(steps: number, step: () => Promise<void>): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < steps + 3; i++) {
    const t0 = performance.now();
    await step();
    await fl.sync();
    if (i >= 3) times.push(performance.now() - t0);
  }
  return median(times);
}
