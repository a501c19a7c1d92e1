/**
 * `flockml launch --max-restarts`: a rank killed at a random step restarts the group, which
 * resumes from its latest checkpoint and ends with the uninterrupted run's parameters, bit for bit.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, tsx } from './harness';

const cli = join(__dirname, '..', '..', 'lib', 'cli', 'main.ts');
const worker = join(__dirname, 'workers', 'train_resume.ts');
const STEPS = 24;
const root = mkdtempSync(join(tmpdir(), 'flockml-restart-'));

function run(name: string, extra: string[], env: NodeJS.ProcessEnv = {}) {
  const out = join(root, `${name}.params`);
  const r = spawnSync(tsx, [cli, 'launch', '--nproc-per-node', '2', '--master-port', String(freePort()), ...extra, worker], {
    encoding: 'utf8',
    timeout: 90_000,
    env: { ...process.env, STEPS: String(STEPS), OUT: out, CKPT_DIR: join(root, `${name}.ckpt`), ...env },
  });
  return { ...r, params: r.status === 0 ? readFileSync(out, 'utf8') : '' };
}

// A small seeded generator: the kill step differs per seed and is the same on every run.
const killStep = (seed: number) => 1 + (((seed * 2654435761) % 2 ** 32) % (STEPS - 2));

test('a rank killed at a random step: the launcher restarts, the run resumes and ends bit-identical', () => {
  try {
    const ref = run('ref', []);
    assert.is(ref.status, 0, ref.stdout + ref.stderr);
    for (const seed of [1, 2, 3]) {
      const at = killStep(seed);
      const r = run(`seed${seed}`, ['--max-restarts', '2', '--restart-backoff-ms', '50'], {
        KILL_AT: String(at),
        KILL_RANK: String(seed % 2),
      });
      const log = `seed ${seed}, kill at step ${at}:\n${r.stdout}${r.stderr}`;
      assert.is(r.status, 0, log);
      assert.match(r.stderr, /exited with SIGKILL/, log);
      assert.match(r.stderr, /restarting the group \(restart 1 of 2\)/, log);
      const resumed = Math.floor(at / 4) * 4;
      if (resumed > 0) assert.match(r.stdout, new RegExp(`resumed at step ${resumed} \\(restart 1\\)`), log);
      assert.ok(r.params === ref.params, `${log}\nfinal parameters differ from the uninterrupted run`);
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('without --max-restarts a failure ends the job; restarts are bounded', () => {
  const dir = mkdtempSync(join(tmpdir(), 'flockml-restart-'));
  try {
    const r = spawnSync(
      tsx,
      [
        cli,
        'launch',
        '--nproc-per-node',
        '2',
        '--master-port',
        String(freePort()),
        '--max-restarts',
        '1',
        '--restart-backoff-ms',
        '10',
        join(__dirname, 'workers', 'exit_code.ts'),
      ],
      { encoding: 'utf8', timeout: 60_000, env: { ...process.env, CKPT_DIR: dir } },
    );
    assert.is(r.status, 7, r.stdout + r.stderr);
    assert.is((r.stderr.match(/restarting the group/g) ?? []).length, 1, r.stderr);
    assert.is((r.stdout.match(/hello from rank 0/g) ?? []).length, 2, 'two attempts');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('restart options are validated', async () => {
  const { launch } = await import('../../lib/distributed/launch');
  for (const bad of [{ maxRestarts: -1 }, { maxRestarts: 1.5 }, { restartBackoffMs: 10 ** 9 }]) {
    try {
      launch({ script: 'x.ts', nprocPerNode: 1, ...bad });
      assert.unreachable(JSON.stringify(bad));
    } catch (e) {
      assert.is((e as { code?: string }).code, 'ERR_ARG');
    }
  }
});

test.run();
