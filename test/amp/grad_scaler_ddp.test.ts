/** GradScaler on 2 real ranks: an inf on one rank makes every rank skip the step. */
import { test } from 'uvu';
import { expectAllOk, runRanks } from '../dist/harness';

test('an inf gradient on rank 1 skips the step and backs off the scale on both ranks', async () => {
  expectAllOk(await runRanks('../../amp/workers/grad_scaler_ddp.ts', 2).done);
});

test.run();
