/** Device meshes on 4 real ranks, and data × tensor parallelism on a [2, 2] mesh against single-process training. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { expectAllOk, runRanks } from './harness';

test('[2, 2] mesh: coordinates, groups and their reductions; a DP × TP transformer block trains 10 steps equal to the unsplit model in one process', async () => {
  const results = await runRanks('tensor_parallel_mesh.ts', 4).done;
  expectAllOk(results);
  for (const r of results) assert.match(r.out, /17 checks passed/);
});

test.run();
