/**
 * An NCCL group whose last owner is its own watcher thread: the watcher times a collective out and
 * fails the clique while every JS reference to the groups is gone, so the groups are destroyed on
 * that thread, in the middle of its loop. Before the watcher held a reference to its group for each
 * pass, it went on to lock the freed group's mutex. The scenario is made deterministic by the
 * simulator's fault plan (it holds the watcher inside ncclCommAbort until JS has let go), and run
 * under valgrind's memcheck, which reports the use after free (exit 99) that a plain run would not
 * notice.
 */
import { spawnSync } from 'node:child_process';
import { join, resolve } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';

const script = join(__dirname, 'workers', 'watcher_last_owner.cjs');
const env = {
  ...process.env,
  FLOCKML_CUDA_SIM_DEVICES: '4',
  FLOCKML_NATIVE: resolve(__dirname, '..', '..', process.env.FLOCKML_NATIVE ?? 'build-sim/sim/flockml.node'),
};

function run(cmd: string, args: string[]) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', env, timeout: 240_000 });
  return { status: r.status, out: `${r.stdout ?? ''}${r.stderr ?? ''}`, error: r.error };
}

test('the groups go away on the watcher thread that failed them (plain run)', () => {
  const r = run(process.execPath, ['--expose-gc', script]);
  assert.is(r.status, 0, r.out);
  assert.ok(r.out.includes('ok'), r.out);
});

test('... and valgrind sees no use of the freed group afterwards', () => {
  const r = run('valgrind', ['-q', '--undef-value-errors=no', '--error-exitcode=99', process.execPath, '--jitless', '--expose-gc', script]);
  assert.not.ok(r.error, `valgrind (Debian's valgrind package) must be installed: ${r.error?.message}`);
  assert.is(r.status, 0, r.out);
  assert.ok(r.out.includes('ok'), r.out);
});

test.run();
