/** GradScaler on 2 real ranks: an inf on one rank makes every rank skip the step. Ring on the CPU, and nccl with a GPU per rank. */
import { test } from 'uvu';
import { expectAllOk, runRanks } from '../dist/harness';
import { NCCL_ENV, ncclRuns, ringRuns } from '../dist/nccl_ranks';

for (const [backend, env] of [
  ['ring', {}],
  ['nccl', NCCL_ENV],
] as const) {
  if (backend === 'ring' ? !ringRuns : !ncclRuns('grad_scaler_ddp', 2)) continue;
  test(`${backend}: an inf gradient on rank 1 skips the step and backs off the scale on both ranks`, async () => {
    expectAllOk(await runRanks('../../amp/workers/grad_scaler_ddp.ts', 2, { env }).done);
  });
}

test.run();
