/** ZeRO stages 1, 2, 3 on 2 and 3 real ranks against single-process training; a checkpoint saved by 2 ranks loads into 3. */
import { test } from 'uvu';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expectAllOk, runRanks } from './harness';

const dir = mkdtempSync(join(tmpdir(), 'flockml-zero-'));

test('2 ranks: ZeroRedundancyOptimizer, DDP zeroStage 1 and 2, FSDP match one process over 10 Adam steps; memory ~1/2 per rank; sharded save', async () => {
  expectAllOk(await runRanks('zero.ts', 2, { env: { ZERO_SAVE: dir, NODE_OPTIONS: '--expose-gc' } }).done);
});

test('3 ranks: the same at 3 ranks, loading the 2-rank checkpoint', async () => {
  expectAllOk(await runRanks('zero.ts', 3, { env: { ZERO_LOAD: dir, NODE_OPTIONS: '--expose-gc' } }).done);
});

test.after(() => rmSync(dir, { recursive: true, force: true }));

test.run();
