/**
 * Devices for the strategy tests. With virtual CPU devices (FLOCKML_CPU_DEVICES, set here before
 * flockml loads) the strategies run on cpu:0 … cpu:N-1; on a build without them every replica runs
 * on 'cpu' and the collectives come from {@link fakeLocalGroups}. CUDA runs happen when at least N
 * GPUs are present (with one GPU, all on cuda:0); the tests print what they skipped.
 */
process.env.FLOCKML_CPU_DEVICES ??= '4';

import * as fl from '../../lib';
import type { ReplicaGroup } from '../../lib/parallel';
import { Work } from '../../lib/distributed/work';

const virtualCpu = (() => {
  try {
    fl.zeros([1]).to('cpu:1').dispose();
    return true;
  } catch {
    return false;
  }
})();

/** The device sets to run a strategy on with `n` devices: CPU always, CUDA when n GPUs exist. */
export function deviceSets(n: number, what: string): string[][] {
  const sets = [virtualCpu ? Array.from({ length: n }, (_, i) => `cpu:${i}`) : Array.from({ length: n }, () => 'cpu')];
  if (!virtualCpu) console.log(`note: ${what}: no virtual CPU devices in this build; ${n} replicas share 'cpu'`);
  const gpus = fl.cuda.deviceCount();
  if (gpus >= n) sets.push(Array.from({ length: n }, (_, i) => `cuda:${i}`));
  else {
    console.log(`skipped: ${what} on cuda:0..cuda:${n - 1} (${gpus} GPU(s) present)`);
    // One GPU still runs the strategy's CUDA path, every replica or stage on cuda:0.
    if (gpus >= 1) sets.push(Array.from({ length: n }, () => 'cuda:0'));
  }
  return sets;
}

/** In-process groups for `devices`: initLocalGroups where it takes them, else {@link fakeLocalGroups}. */
export async function localGroups(devices: string[]): Promise<ReplicaGroup[]> {
  if (new Set(devices).size === devices.length) {
    try {
      const init = fl.distributed.initLocalGroups as unknown as (d: unknown) => Promise<ReplicaGroup[]>;
      return await init(devices.every((d) => d.startsWith('cuda:')) ? devices.map((d) => Number(d.slice(5))) : devices);
    } catch (e) {
      if (devices.every((d) => d.startsWith('cuda:'))) throw e;
    }
  }
  return fakeLocalGroups(devices);
}

/**
 * A reference collective for tests on builds without CPU local groups: each allReduce waits for
 * every peer's call with the same sequence number, sums the tensors in rank order on the first
 * peer's device and copies the result to every peer, so every peer gets identical bits.
 */
export function fakeLocalGroups(devices: string[]): ReplicaGroup[] {
  const pending: { t: fl.Tensor; op: string; resolve: () => void }[][] = [];
  const seq = devices.map(() => 0);
  return devices.map((_, rank) => ({
    allReduce(t: fl.Tensor, options: { op?: 'sum' | 'avg' } = {}): Work {
      const n = seq[rank]++;
      pending[n] ??= [];
      let resolve!: () => void;
      const done = new Promise<void>((r) => (resolve = r));
      pending[n][rank] = { t, op: options.op ?? 'sum', resolve };
      const posted = pending[n].filter(Boolean);
      if (posted.length === devices.length) {
        fl.noGrad(() =>
          fl.tidy(() => {
            const [first, ...rest] = pending[n];
            let acc = first.t.clone();
            for (const e of rest) acc = acc.add(e.t.to(acc.device));
            if (first.op === 'avg') acc = acc.div(devices.length);
            for (const e of pending[n]) e.t.copy_(acc.to(e.t.device));
          }),
        );
        for (const e of pending[n]) e.resolve();
      }
      return new Work('allReduce', done);
    },
  }));
}

/** Values of `t` as a plain array (any device). */
export function values(t: fl.Tensor): number[] {
  return Array.from(t.to('cpu').dataSync() as Float32Array);
}

/** Largest absolute difference between two models' parameters, in order. */
export function maxParamDiff(a: fl.Tensor[], b: fl.Tensor[]): number {
  let worst = 0;
  a.forEach((p, i) => {
    const x = values(p);
    const y = values(b[i]);
    for (let j = 0; j < x.length; j++) worst = Math.max(worst, Math.abs(x[j] - y[j]));
  });
  return worst;
}
