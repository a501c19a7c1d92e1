/** Gradient checkpointing and GradScaler inside DistributedDataParallel on 2 real ranks. */
import { test } from 'uvu';
import { expectAllOk, runRanks } from './harness';

test('checkpointSequential under DDP: gradients equal the plain DDP run bit for bit, buckets still overlap; GradScaler skips on every rank', async () => {
  expectAllOk(await runRanks('checkpoint_ddp.ts', 2).done);
});

test.run();
