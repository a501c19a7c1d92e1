/** DistributedDataParallel on 2 real ranks against single-process training: ring on the CPU, and nccl with a GPU per rank. */
import { test } from 'uvu';
import { expectAllOk, runRanks } from './harness';
import { NCCL_ENV, ncclRuns, ringRuns } from './nccl_ranks';

const WHAT =
  '2 ranks x batch 32 match 1 process x batch 64 over 20 SGD steps; noSync; buffers follow rank 0; missing and unused parameters; 16-bit compression';

if (ringRuns)
  test(`ring: ${WHAT}`, async () => {
    expectAllOk(await runRanks('ddp.ts', 2).done);
  });

if (ncclRuns('ddp', 2))
  test(`nccl, cuda:LOCAL_RANK: ${WHAT}`, async () => {
    expectAllOk(await runRanks('ddp.ts', 2, { env: NCCL_ENV }).done);
  });

test.run();
