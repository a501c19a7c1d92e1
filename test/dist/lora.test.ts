/**
 * LoRA under DDP, ZeRO 1/2/3 and FSDP on 2 real ranks (ring backend): the adapters train as in one
 * process on whole batches, the frozen base stays rank 0's bit for bit, and only adapters get
 * gradients, buckets, shard spaces and optimizer state.
 */
import { test } from 'uvu';
import { expectAllOk, runRanks } from './harness';
import { ringRuns } from './nccl_ranks';

if (ringRuns)
  test('ring, 2 ranks: a LoRA-adapted GPT-2 under DDP, ZeroRedundancyOptimizer, DDP zeroStage 1/2/3 and FSDP matches one process over 6 AdamW steps', async () => {
    expectAllOk(await runRanks('lora.ts', 2).done);
  });

test.run();
