/**
 * ZeRO stages 1, 2, 3 on 2 and 3 real ranks against single-process training; a checkpoint saved by 2 ranks
 * loads into 3. On the ring backend (CPU), and on nccl with a GPU per rank where there are 3 GPUs.
 */
import { test } from 'uvu';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expectAllOk, runRanks } from './harness';
import { NCCL_ENV, ncclRuns, ringRuns } from './nccl_ranks';

const dirs: string[] = [];

for (const [backend, env] of [
  ['ring', {}],
  ['nccl', NCCL_ENV],
] as const) {
  if (backend === 'ring' ? !ringRuns : !ncclRuns('zero', 3)) continue;
  const dir = mkdtempSync(join(tmpdir(), `flockml-zero-${backend}-`));
  dirs.push(dir);
  const run = (n: number, extra: NodeJS.ProcessEnv) =>
    runRanks('zero.ts', n, { env: { ...env, ...extra, NODE_OPTIONS: '--expose-gc' } }).done.then(expectAllOk);

  test(`${backend}, 2 ranks: ZeroRedundancyOptimizer, DDP zeroStage 1 and 2, FSDP match one process over 10 Adam steps; memory ~1/2 per rank; sharded save`, () =>
    run(2, { ZERO_SAVE: dir }));

  test(`${backend}, 3 ranks: the same at 3 ranks, loading the 2-rank checkpoint`, () => run(3, { ZERO_LOAD: dir }));
}

test.after(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

test.run();
