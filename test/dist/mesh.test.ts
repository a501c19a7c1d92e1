/**
 * Device meshes on 4 real ranks, and data × tensor parallelism on a [2, 2] mesh against single-process
 * training: on the ring backend (CPU), and on nccl with a GPU per rank where there are 4 GPUs.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { expectAllOk, runRanks } from './harness';
import { NCCL_ENV, ncclRuns, ringRuns } from './nccl_ranks';

for (const [backend, env] of [
  ['ring', {}],
  ['nccl', NCCL_ENV],
] as const) {
  if (backend === 'ring' ? !ringRuns : !ncclRuns('mesh', 4)) continue;
  test(`${backend}, [2, 2] mesh: coordinates, groups and their reductions; a DP × TP transformer block trains 10 steps equal to the unsplit model in one process`, async () => {
    const results = await runRanks('tensor_parallel_mesh.ts', 4, { env }).done;
    expectAllOk(results);
    for (const r of results) assert.match(r.out, /17 checks passed/);
  });
}

test.run();
