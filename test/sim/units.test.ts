/**
 * The CUDA simulator's own unit tests (C++ executables built by `npm run build:sim`): the kernel
 * engine (barriers, per-warp shuffles, atomics, the mma fragment layouts against a direct product,
 * divergence and deadlock faults, launch limits) and the simulated runtime (streams, events, the
 * legacy default stream, contexts, pools and OOM, peer checks, stream memory ops, fault injection),
 * the runtime both with and without peer access, and the simulated NCCL.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';

const dir = join(__dirname, '..', '..', 'build-sim', 'sim');

function run(exe: string, env: Record<string, string> = {}): void {
  const path = join(dir, exe);
  assert.ok(existsSync(path), `${path} is missing: run npm run build:sim`);
  const r = spawnSync(path, [], { encoding: 'utf8', env: { ...process.env, ...env }, timeout: 300_000 });
  const out = `${r.stdout}${r.stderr}`;
  const m = /(\d+) passed, (\d+) failed/.exec(out);
  assert.ok(m, `${exe} printed no result line:\n${out}`);
  assert.is(Number(m?.[2]), 0, out);
  assert.ok(Number(m?.[1]) > 0, out);
  assert.is(r.status, 0, out);
}

test('the kernel engine', () => run('sim_engine_test'));
test('the runtime, peers with access', () => run('sim_runtime_test'));
test('the runtime, no peer access', () => run('sim_runtime_test', { FLOCKML_CUDA_SIM_PEER: '0' }));
test('the NCCL: every collective, op and dtype on 2 and 4 ranks, in one process and across processes, abort and mismatch', () =>
  run('sim_nccl_test'));

test.run();
