/**
 * DDP zeroStage 3 on 2, 3 and 4 real ranks against single-process training; a checkpoint saved by 2
 * ranks loads into 3; parameters in no unit train in a root unit.
 */
import { test } from 'uvu';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expectAllOk, runRanks } from './harness';

const dir = mkdtempSync(join(tmpdir(), 'flockml-zero3-'));
const env = { NODE_OPTIONS: '--expose-gc' };

test('2 ranks: DDP zeroStage 3 matches one process over 10 Adam steps; memory ~1/2 per rank; sharded save', async () => {
  expectAllOk(await runRanks('zero3.ts', 2, { env: { ...env, ZERO3_SAVE: dir } }).done);
});

test('3 ranks: the same at 3 ranks, loading the 2-rank checkpoint', async () => {
  expectAllOk(await runRanks('zero3.ts', 3, { env: { ...env, ZERO3_LOAD: dir } }).done);
});

test('4 ranks: the same at 4 ranks', async () => {
  expectAllOk(await runRanks('zero3.ts', 4, { env }).done);
});

test('2 and 3 ranks: parameters in no unit form a root unit and train as in one process', async () => {
  expectAllOk(await runRanks('zero3_root.ts', 2).done);
  expectAllOk(await runRanks('zero3_root.ts', 3).done);
});

test.after(() => rmSync(dir, { recursive: true, force: true }));

test.run();
