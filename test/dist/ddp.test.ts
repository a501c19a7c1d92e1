/** DistributedDataParallel on 2 real ranks against single-process training. */
import { test } from 'uvu';
import { expectAllOk, runRanks } from './harness';

test('2 ranks x batch 32 match 1 process x batch 64 over 20 SGD steps; noSync; buffers follow rank 0; missing and unused parameters; 16-bit compression', async () => {
  expectAllOk(await runRanks('ddp.ts', 2).done);
});

test.run();
