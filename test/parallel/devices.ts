/**
 * Devices for the strategy tests: virtual CPU devices cpu:0 … cpu:N-1 (FLOCKML_CPU_DEVICES, set
 * here before flockml loads), and CUDA devices when at least N GPUs are present (with one GPU, all
 * on cuda:0); the tests print what they skipped.
 */
process.env.FLOCKML_CPU_DEVICES ??= '4';

import * as fl from '../../lib';
import type { ReplicaGroup } from '../../lib/parallel';
import { maxAbsDiff, values } from '../helpers/values';

/** The device sets to run a strategy on with `n` devices: CPU always, CUDA when n GPUs exist. */
export function deviceSets(n: number, what: string): string[][] {
  const sets = [Array.from({ length: n }, (_, i) => `cpu:${i}`)];
  const gpus = fl.cuda.deviceCount();
  if (gpus >= n) sets.push(Array.from({ length: n }, (_, i) => `cuda:${i}`));
  else {
    console.log(`skipped: ${what} on cuda:0..cuda:${n - 1} (${gpus} GPU(s) present)`);
    // One GPU still runs the strategy's CUDA path, every replica or stage on cuda:0.
    if (gpus >= 1) sets.push(Array.from({ length: n }, () => 'cuda:0'));
  }
  return sets;
}

/** One in-process group per device (fl.distributed.initLocalGroups). */
export function localGroups(devices: string[]): Promise<ReplicaGroup[]> {
  return fl.distributed.initLocalGroups(devices);
}

/** Largest absolute difference between two models' parameters, in order (NaN if either holds a NaN). */
export function maxParamDiff(a: fl.Tensor[], b: fl.Tensor[]): number {
  return a.reduce((worst, p, i) => Math.max(worst, maxAbsDiff(values(p), values(b[i]))), 0);
}
