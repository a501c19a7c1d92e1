/** Gradient checkpointing and GradScaler inside DistributedDataParallel on 2 real ranks: ring on the CPU, and nccl with a GPU per rank. */
import { test } from 'uvu';
import { expectAllOk, runRanks } from './harness';
import { NCCL_ENV, ncclRuns, ringRuns } from './nccl_ranks';

for (const [backend, env] of [
  ['ring', {}],
  ['nccl', NCCL_ENV],
] as const) {
  if (backend === 'ring' ? !ringRuns : !ncclRuns('checkpoint_ddp', 2)) continue;
  test(`${backend}: checkpointSequential under DDP: gradients equal the plain DDP run bit for bit, buckets still overlap; GradScaler skips on every rank`, async () => {
    expectAllOk(await runRanks('checkpoint_ddp.ts', 2, { env }).done);
  });
}

test.run();
