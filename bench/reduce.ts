/**
 * CPU f32 sums (cpp/cpu/reduce.cc): a column reduction `t.sum(0)` on [16384, 512] (every bias
 * gradient), a row reduction `t.sum(1)` on [512, 16384], and `sum()` of 1e7 elements. One JSON line
 * per case: the median ms per call.
 *   npm run bench -- reduce [--iters N]
 */
import * as fl from '../lib';
import { numberFlag } from './shared/args';
import { median } from './shared/timing';

const iters = numberFlag('iters', 20);
const cases: [string, number[], (x: fl.Tensor) => fl.Tensor][] = [
  ['sum(0)', [16384, 512], (x) => x.sum(0)],
  ['sum(1)', [512, 16384], (x) => x.sum(1)],
  ['sum(0)', [512, 16384], (x) => x.sum(0)],
  ['sum()', [10_000_000], (x) => x.sum()],
  ['mean(0)', [16384, 512], (x) => x.mean(0)],
];

async function main(): Promise<void> {
  for (const [name, shape, f] of cases) {
    const x = fl.randn(shape);
    const times: number[] = [];
    for (let i = 0; i < iters + 3; i++) {
      await fl.sync();
      const t0 = performance.now();
      f(x).dispose();
      await fl.sync();
      if (i >= 3) times.push(performance.now() - t0);
    }
    console.log(JSON.stringify({ bench: 'reduce', op: name, shape, dtype: 'f32', ms: Number(median(times).toFixed(3)) }));
    x.dispose();
  }
}

void main();
