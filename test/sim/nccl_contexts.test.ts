/**
 * Context placement per rank (issue 36): a 4-rank nccl job on the CUDA simulator, each rank on
 * cuda:LOCAL_RANK, creates exactly one CUDA context per rank, on its own device (the bug class: every
 * rank also putting a context on GPU 0). Each worker prints the simulator's device state at exit
 * (FLOCKML_TEST_SIM_STATE, test/dist/workers/backend.ts). Ranks started by runRanks and by
 * `flockml launch --nproc-per-node 4`. Under test/sim/: runs only on the simulator's addon (`test/run.ts --sim`).
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { expectAllOk, freePort, runRanks, tsx } from '../dist/harness';
import { NCCL_ENV, ncclRuns } from '../dist/nccl_ranks';

const env = { ...NCCL_ENV, FLOCKML_TEST_SIM_STATE: '1' };

/** The devices with a context in `out`'s SIM_STATE line. */
function contexts(out: string): number[] {
  const l = out.split('\n').find((s) => s.startsWith('SIM_STATE '));
  assert.ok(l, `no SIM_STATE line:\n${out}`);
  const state = JSON.parse(l.slice('SIM_STATE '.length)) as { devices: { context: boolean }[] };
  return state.devices.flatMap((d, i) => (d.context ? [i] : []));
}

if (ncclRuns('nccl contexts', 4)) {
  for (const [worker, args, what] of [
    ['tensor_parallel_mesh.ts', [], 'a [2, 2] DP × TP mesh'],
    ['pipeline.ts', ['dp'], '2 pipeline stages × 2 DDP replicas'],
  ] as const)
    test(`4 ranks, ${what}: rank r has a context on cuda:r and nowhere else`, async () => {
      const results = await runRanks(worker, 4, { env, args: [...args] }).done;
      expectAllOk(results);
      for (const r of results) assert.equal(contexts(r.out), [r.rank], `rank ${r.rank}'s contexts`);
    });

  test('flockml launch --nproc-per-node 4, a [2, 2] DP × TP mesh: one context per rank, on its own device', () => {
    const cli = join(__dirname, '..', '..', 'lib', 'cli', 'main.ts');
    const worker = join(__dirname, '..', 'dist', 'workers', 'tensor_parallel_mesh.ts');
    const r = spawnSync(tsx, [cli, 'launch', '--nproc-per-node', '4', '--master-port', String(freePort()), worker], {
      encoding: 'utf8',
      env: { ...process.env, ...env, FLOCKML_TOKEN: 'test-token' },
      timeout: 120_000,
    });
    const out = `${r.stdout}${r.stderr}`;
    assert.is(r.status, 0, out);
    const states = out.split('\n').filter((s) => s.startsWith('SIM_STATE ') || /SIM_STATE /.test(s));
    assert.is(states.length, 4, out);
    const seen = states.map((s) => contexts(s.slice(s.indexOf('SIM_STATE '))));
    // The launcher's output does not say which rank printed which line: each rank one device, all distinct.
    for (const c of seen) assert.is(c.length, 1, `a rank has contexts on ${c}:\n${out}`);
    assert.equal(seen.map((c) => c[0]).sort(), [0, 1, 2, 3], out);
  });
}

test.run();
