/**
 * DDP zeroStage 3 on 2, 3 and 4 real ranks against single-process training; a checkpoint saved by 2
 * ranks loads into 3; parameters in no unit train in a root unit. On the ring backend (CPU), and on
 * nccl with a GPU per rank where there are 4 GPUs.
 */
import { test } from 'uvu';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expectAllOk, runRanks } from './harness';
import { NCCL_ENV, ncclRuns, ringRuns } from './nccl_ranks';

const dirs: string[] = [];

for (const [backend, env] of [
  ['ring', { NODE_OPTIONS: '--expose-gc' }],
  ['nccl', { ...NCCL_ENV, NODE_OPTIONS: '--expose-gc' }],
] as const) {
  if (backend === 'ring' ? !ringRuns : !ncclRuns('zero3', 4)) continue;
  const dir = mkdtempSync(join(tmpdir(), `flockml-zero3-${backend}-`));
  dirs.push(dir);
  const run = (worker: string, n: number, extra: NodeJS.ProcessEnv = {}) =>
    runRanks(worker, n, { env: { ...env, ...extra } }).done.then(expectAllOk);

  test(`${backend}, 2 ranks: DDP zeroStage 3 matches one process over 10 Adam steps; memory ~1/2 per rank; sharded save`, () =>
    run('zero3.ts', 2, { ZERO3_SAVE: dir }));

  test(`${backend}, 3 ranks: the same at 3 ranks, loading the 2-rank checkpoint`, () => run('zero3.ts', 3, { ZERO3_LOAD: dir }));

  test(`${backend}, 4 ranks: the same at 4 ranks`, () => run('zero3.ts', 4));

  test(`${backend}, 2 and 3 ranks: parameters in no unit form a root unit and train as in one process`, async () => {
    await run('zero3_root.ts', 2);
    await run('zero3_root.ts', 3);
  });
}

test.after(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

test.run();
