/**
 * The harness's perf mode: every case with `sized` inputs (the rest at their own size), on each
 * device and dtype it runs in, timed per call (queue and finish: a sync after each) with the median
 * of the runs. One JSON line per op × dtype × size, after an anchor line per device and size: a
 * clone (one read and one write of n f32 values), the memory-bound floor element-wise ops compare to.
 *
 *   npx tsx test/ops/harness/perf.ts [--sizes 1025,65537] [--runs 15] [--op matmul] [--device cpu]
 *   npm run bench -- ops [same flags]
 */
import * as fl from '../../../lib/index';
import type { DType, Tensor } from '../../../lib/index';
import { caseName, dtypesFor, seedOf } from './check';
import { makeInputs } from './make';
import { coverage } from './plan';
import type { OpCase } from './types';

function flag(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

async function median(device: string, runs: number, f: () => unknown): Promise<number> {
  const times: number[] = [];
  for (let r = 0; r <= runs; r++) {
    const t0 = performance.now();
    fl.tidy(() => {
      f();
    });
    await fl.sync(device);
    if (r > 0) times.push(performance.now() - t0); // the first run warms caches and pools
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)];
}

export async function perf(): Promise<void> {
  const sizes = (flag('sizes') ?? '1025,65537').split(',').map(Number);
  const runs = Number(flag('runs') ?? 15);
  const only = flag('op');
  const devices = flag('device')
    ? [flag('device') as string]
    : ['cpu', ...Array.from({ length: fl.cuda.deviceCount() }, (_, i) => `cuda:${i}`)];
  const { covered } = coverage();
  for (const device of devices) {
    const kind = device === 'cpu' ? 'cpu' : 'cuda';
    await median(device, runs, () => fl.randn([1024], { device }).clone()); // starts the stream and the thread pool
    for (const n of sizes) {
      const x = fl.randn([n], { device });
      const ms = await median(device, runs, () => x.clone());
      console.log(JSON.stringify({ bench: 'ops', anchor: 'clone', device, dtype: 'f32', n, median_ms: +ms.toFixed(4) }));
    }
    for (const { c, decl } of covered) {
      if (only && c.op !== only) continue;
      if (!decl.dtypes[kind]) continue;
      for (const dtype of dtypesFor(c, decl, kind)) {
        const at: (number | 'default')[] = c.sized ? sizes : ['default'];
        for (const n of at) {
          const specs = n === 'default' || !c.sized ? c.inputs : c.sized(n);
          const xs = makeInputs(specs, dtype as DType, seedOf(c)).tensors.map((t: Tensor) => t.to(device));
          const ms = await median(device, runs, () => fl.noGrad(() => c.run(...xs)));
          console.log(JSON.stringify({ bench: 'ops', op: c.op, case: caseName(c as OpCase), device, dtype, n, median_ms: +ms.toFixed(4) }));
        }
      }
    }
  }
}

if (require.main === module)
  perf().catch((e) => {
    console.error(e);
    process.exit(1);
  });
