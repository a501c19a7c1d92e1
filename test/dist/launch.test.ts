/** `flockml launch`: environment, [rank] prefixes, and teardown with the failing rank's exit code. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort, tsNode, tsx } from './harness';

const cli = join(__dirname, '..', '..', 'lib', 'cli', 'main.ts');
const worker = (name: string) => join(__dirname, 'workers', name);

test("a failing rank stops the others and its exit code is the launcher's", () => {
  const started = Date.now();
  const r = spawnSync(tsx, [cli, 'launch', '--nproc-per-node', '3', '--master-port', String(freePort()), worker('exit_code.ts')], {
    encoding: 'utf8',
    timeout: 60_000,
  });
  assert.is(r.status, 7, r.stdout + r.stderr);
  assert.ok(Date.now() - started < 30_000);
  for (const rank of [0, 1, 2]) assert.match(r.stdout, new RegExp(`^\\[${rank}\\] hello from rank ${rank} of 3 token=set$`, 'm'));
  assert.match(r.stderr, /rank 1 exited with code 7/);
});

test('SIGINT to the launcher reaches every rank and ends the job', async () => {
  const job = spawn(tsx, [cli, 'launch', '--nproc-per-node', '2', '--master-port', String(freePort()), worker('exit_code.ts')], {
    env: { ...process.env, MODE: 'forever' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const exited = new Promise<number | null>((resolve) => job.on('close', (code) => resolve(code)));
  await new Promise<void>((resolve) =>
    job.stdout!.on('data', (d) => {
      out += d;
      if ((out.match(/hello from rank/g) ?? []).length === 2) resolve();
    }),
  );
  // tsx's wrapper relays the signal to the launcher, which forwards it to the ranks.
  job.kill('SIGINT');
  const killer = setTimeout(() => job.kill('SIGKILL'), 20_000);
  const code = await exited;
  clearTimeout(killer);
  assert.ok(code !== 0 && code !== null, `exit ${code}`);
});

/** Whether `pid` is a running process (a zombie nobody has reaped yet counts as gone). */
function running(pid: number): boolean {
  try {
    return !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'));
  } catch {
    return false;
  }
}

test('ranks exit when the launcher is killed with SIGKILL, and the store port is free for the next job', async () => {
  const port = String(freePort());
  // The launcher itself (node + the tsx loader), not the tsx CLI wrapper: the SIGKILL must hit the launcher.
  const job = spawn(tsNode[0], [...tsNode.slice(1), cli, 'launch', '--nproc-per-node', '2', '--master-port', port, worker('sleeper.ts')], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  job.stderr!.on('data', (d) => (out += d));
  const pids = await new Promise<number[]>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`ranks never got ready:\n${out}`)), 30_000);
    job.stdout!.on('data', (d) => {
      out += d;
      const found = [...out.matchAll(/ready rank=\d+ pid=(\d+)/g)].map((m) => Number(m[1]));
      if (found.length === 2) {
        clearTimeout(timer);
        resolve(found);
      }
    });
  });
  try {
    job.kill('SIGKILL');
    const deadline = Date.now() + 5000;
    while (pids.some(running) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    assert.equal(pids.filter(running), [], `ranks still running 5 s after the launcher was killed:\n${out}`);
    const r = spawnSync(tsx, [cli, 'launch', '--nproc-per-node', '2', '--master-port', port, worker('store_client.ts')], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.is(r.status, 0, r.stdout + r.stderr);
  } finally {
    for (const pid of pids.filter(running)) process.kill(pid, 'SIGKILL');
  }
});

test('launch options are validated: an unknown key names the likely one', async () => {
  const { launch } = await import('../../lib/distributed/launch');
  try {
    launch({ script: 'x.ts', nprocPerNode: 1, masterPrt: 1 } as never);
    assert.unreachable('accepted an unknown option');
  } catch (e) {
    const err = e as Error & { code?: string };
    assert.is(err.code, 'ERR_ARG');
    assert.match(err.message, /unknown option 'masterPrt' \(did you mean 'masterPort'\?\)/);
  }
  try {
    launch({ script: 'x.ts', nprocPerNode: 0 });
    assert.unreachable('accepted nprocPerNode 0');
  } catch (e) {
    assert.is((e as { code?: string }).code, 'ERR_ARG');
  }
});

test('a job whose ranks all succeed exits 0', () => {
  const r = spawnSync(tsx, [cli, 'launch', '--nproc-per-node=2', `--master-port=${freePort()}`, worker('store_client.ts')], {
    encoding: 'utf8',
    timeout: 60_000,
  });
  assert.is(r.status, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /^\[0\] ok$/m);
  assert.match(r.stdout, /^\[1\] ok$/m);
});

test('two nodes (two launchers) form one world of 4 ranks', async () => {
  const port = String(freePort());
  const node = (rank: number) => {
    const job = spawn(
      tsx,
      [
        cli,
        'launch',
        '--nnodes',
        '2',
        '--node-rank',
        String(rank),
        '--nproc-per-node',
        '2',
        '--master-addr',
        '127.0.0.1',
        '--master-port',
        port,
        worker('collectives.ts'),
      ],
      { env: { ...process.env, FLOCKML_TOKEN: 'shared-secret', SIZES: '0,7,4099' }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    job.stdout!.on('data', (d) => (out += d));
    job.stderr!.on('data', (d) => (out += d));
    const killer = setTimeout(() => job.kill('SIGKILL'), 90_000);
    return new Promise<[number | null, string]>((resolve) =>
      job.on('close', (code) => {
        clearTimeout(killer);
        resolve([code, out]);
      }),
    );
  };
  const [[c0, out0], [c1, out1]] = await Promise.all([node(0), node(1)]);
  assert.is(c0, 0, out0);
  assert.is(c1, 0, out1);
  for (const r of [0, 1]) assert.match(out0, new RegExp(`^\\[${r}\\] rank ${r}: ok$`, 'm'));
  for (const r of [2, 3]) assert.match(out1, new RegExp(`^\\[${r}\\] rank ${r}: ok$`, 'm'));
});

test('a multi-node job without a shared FLOCKML_TOKEN is refused', () => {
  const env = { ...process.env };
  delete env.FLOCKML_TOKEN;
  const r = spawnSync(tsx, [cli, 'launch', '--nnodes', '2', '--node-rank', '1', '--nproc-per-node', '1', 'x.ts'], {
    encoding: 'utf8',
    env,
    timeout: 30_000,
  });
  assert.is(r.status, 2, r.stdout + r.stderr);
  assert.match(r.stderr, /FLOCKML_TOKEN/);
});

test('bad arguments are reported with usage-level errors', () => {
  const r = spawnSync(tsx, [cli, 'launch', '--nproc-per-node', '0', 'x.ts'], { encoding: 'utf8', timeout: 30_000 });
  assert.is(r.status, 2);
  assert.match(r.stderr, /nproc-per-node/);
});

test('flockml info reports devices and NCCL', () => {
  const r = spawnSync(tsx, [cli, 'info'], { encoding: 'utf8', timeout: 30_000 });
  assert.is(r.status, 0, r.stderr);
  const info = JSON.parse(r.stdout);
  assert.ok(info.devices.includes('cpu'));
  assert.type(info.nccl.found, 'boolean');
  if (!info.nccl.found) assert.type(info.nccl.reason, 'string');
});

test.run();
