/** Every collective of the ring backend on 2, 3 and 4 real processes, against a local reference. */
import { test } from 'uvu';
import { expectAllOk, runRanks } from './harness';

for (const n of [2, 3, 4]) {
  test(`ring collectives on ${n} ranks: all dtypes, sizes 0, 1, 7, 1M+3`, async () => {
    expectAllOk(await runRanks('collectives.ts', n).done);
  });
}

test.run();
