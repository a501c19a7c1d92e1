/** `flockml doctor`: reports "no GPU" cleanly here, the interfaces NCCL would use, and the store port. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { diagnose, ncclInterfaces } from '../../lib/cli/doctor';
import { native } from '../../lib/native';
import { freePort, tsx } from './harness';

const cli = join(__dirname, '..', '..', 'lib', 'cli', 'main.ts');

test('the CLI prints every check; exit 0 when nothing failed', () => {
  const r = spawnSync(tsx, [cli, 'doctor', '--json'], {
    encoding: 'utf8',
    timeout: 60_000,
    env: { ...process.env, MASTER_PORT: String(freePort()) },
  });
  const checks = JSON.parse(r.stdout) as Array<{ name: string; status: string; detail: string; advice?: string }>;
  const names = checks.map((c) => c.name);
  for (const n of ['nccl', 'network', 'store port']) assert.ok(names.includes(n), n);
  if (native.gpuDeviceCount() === 0) assert.match(checks.find((c) => c.name === 'gpu')!.detail, /no GPU/);
  for (const c of checks) if (c.status === 'warn' || c.status === 'fail') assert.ok(c.advice, `${c.name} has advice`);
  assert.is(r.status, checks.some((c) => c.status === 'fail') ? 1 : 0, r.stderr);
});

test('a store port already taken is a failure with advice', async () => {
  const port = freePort();
  const s = createServer();
  await new Promise<void>((r) => s.listen(port, '127.0.0.1', r));
  try {
    const store = (await diagnose({ env: { MASTER_ADDR: '127.0.0.1', MASTER_PORT: String(port) } })).find((c) => c.name === 'store port')!;
    assert.is(store.status, 'fail');
    assert.match(store.advice!, /--master-port/);
    const remote = (await diagnose({ env: { MASTER_ADDR: '192.0.2.254', MASTER_PORT: '9' }, timeoutMs: 300 })).find(
      (c) => c.name === 'store port',
    )!;
    assert.ok(remote.status !== 'ok', 'an unroutable master is not reachable');
  } finally {
    s.close();
  }
  try {
    await diagnose({ timeout: 1 } as never);
    assert.unreachable();
  } catch (e) {
    assert.is((e as { code?: string }).code, 'ERR_ARG');
  }
});

test('NCCL_SOCKET_IFNAME is read as NCCL reads it', () => {
  const a = (address: string, internal = false) => [{ address, internal, family: 'IPv4', netmask: '', mac: '', cidr: null }];
  const ifaces = {
    lo: a('127.0.0.1', true),
    eth0: a('10.0.0.1'),
    eth1: a('10.0.1.1'),
    ib0: a('10.1.0.1'),
    docker0: a('172.17.0.1'),
  } as never;
  assert.equal(ncclInterfaces({}, ifaces), ['eth0', 'eth1', 'ib0']);
  assert.equal(ncclInterfaces({ NCCL_SOCKET_IFNAME: 'eth' }, ifaces), ['eth0', 'eth1']);
  assert.equal(ncclInterfaces({ NCCL_SOCKET_IFNAME: '=eth1' }, ifaces), ['eth1']);
  assert.equal(ncclInterfaces({ NCCL_SOCKET_IFNAME: '^eth,docker' }, ifaces), ['lo', 'ib0']);
});

test.run();
