/** FLOCKML_CPU_DEVICES and setCpuDeviceCount in fresh processes: the count, precedence, and errors. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

const tsx = join(__dirname, '..', 'node_modules', '.bin', 'tsx');
const fixture = join(__dirname, 'devices_env_fixture.ts');

function run(env: Record<string, string>, mode = ''): { status: number | null; stdout: string; stderr: string } {
  const base = { ...process.env };
  delete base.FLOCKML_CPU_DEVICES;
  const r = spawnSync(tsx, [fixture, mode], { encoding: 'utf8', env: { ...base, ...env }, timeout: 120_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

const parse = (s: string) => JSON.parse(s.trim().split('\n').pop() ?? '{}');

test('one CPU device by default, unchanged', () => {
  const r = parse(run({}).stdout);
  assert.is(r.count, 1);
  assert.equal(r.devices, ['cpu']);
  assert.equal(r.memory, ['cpu']);
  assert.is(r.sum, 45);
});

test('FLOCKML_CPU_DEVICES=3 gives cpu, cpu:1, cpu:2; the thread count stays the total', () => {
  const one = parse(run({}).stdout);
  const r = parse(run({ FLOCKML_CPU_DEVICES: '3' }).stdout);
  assert.is(r.count, 3);
  assert.equal(r.devices, ['cpu', 'cpu:1', 'cpu:2']);
  assert.equal(r.memory, ['cpu', 'cpu:1', 'cpu:2']);
  assert.is(r.threads, one.threads);
  assert.is(r.sum, 45);
});

test('setCpuDeviceCount before use takes precedence over the environment', () => {
  const r = parse(run({ FLOCKML_CPU_DEVICES: '5' }, 'set-before-use').stdout);
  assert.is(r.count, 3);
});

test('setCpuDeviceCount after first use throws ERR_DEVICE', () => {
  const r = parse(run({}, 'set-after-use').stdout);
  assert.is(r.error.code, 'ERR_DEVICE');
  assert.match(r.error.message, /already in use \(1 of them\)/);
  assert.is(r.count, 1);
});

test('a bad FLOCKML_CPU_DEVICES fails the import with ERR_DEVICE', () => {
  for (const bad of ['0', '17', 'two', '2.5']) {
    const r = run({ FLOCKML_CPU_DEVICES: bad });
    assert.is.not(r.status, 0, bad);
    assert.match(r.stderr, new RegExp(`FLOCKML_CPU_DEVICES must be an integer from 1 to 16, got '${bad.replace('.', '\\.')}'`));
  }
});

test.run();
