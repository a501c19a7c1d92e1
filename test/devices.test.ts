/**
 * Virtual CPU devices: the host as cpu:0 ... cpu:3, each with its own stream. Tensors on them,
 * cross-device errors, stream-ordered copies, events, per-device memory, sync points, save/load,
 * the profiler's per-device streams, and autograd through copies between devices.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as fl from '../lib/index';
import { native } from '../lib/native';
import { close, expectError, refMatmul } from './helpers/reference';
import { values } from './helpers/values';

fl.setCpuDeviceCount(4);

// Holds cpu:0's stream at a local-group barrier until `release()` posts the other side on cpu:3:
// a deterministic way to keep one device busy while the test checks what the others do.
async function blockCpu0(): Promise<{ release: () => Promise<void>; groups: fl.distributed.ProcessGroup[] }> {
  const groups = await fl.distributed.initLocalGroups(['cpu:0', 'cpu:3'], { timeoutMs: 30_000 });
  const held = groups[0].barrier();
  return {
    groups,
    release: async () => {
      const other = groups[1].barrier();
      await Promise.all([held.wait(), other.wait()]);
      for (const g of groups) g.destroy();
    },
  };
}

test('the count is fixed at first use; cpu:N up to the count, cpu means cpu:0', () => {
  assert.is(fl.cpuDeviceCount(), 4);
  assert.equal(fl.cpuDevices(), ['cpu', 'cpu:1', 'cpu:2', 'cpu:3']);
  fl.setCpuDeviceCount(4); // the same count again is fine
  expectError(() => fl.setCpuDeviceCount(2), TypeError, 'ERR_DEVICE', /already in use \(4 of them\)/);
  expectError(() => fl.setCpuDeviceCount(0), TypeError, 'ERR_DEVICE', /from 1 to 16/);
  const t = fl.zeros([2], { device: 'cpu:0' });
  assert.is(t.device, 'cpu');
  assert.is(fl.zeros([2], { device: 'cpu:3' }).device, 'cpu:3');
  expectError(() => fl.zeros([2], { device: 'cpu:4' }), TypeError, 'ERR_DEVICE', /cpu:4.*4 CPU devices/);
  expectError(() => fl.zeros([2], { device: 'cpu:x' }), TypeError, 'ERR_DEVICE', /invalid device/);
  // The native side checks again, whatever the JS layer let through.
  expectError(() => native.empty([2], 'f32', 'cpu:7'), TypeError, 'ERR_DEVICE', /cpu:7.*4 CPU devices/);
  expectError(() => native.empty([2], 'f32', 'cpu:-1'), TypeError, 'ERR_DEVICE', /invalid device/);
  assert.ok(fl.sameDevice('cpu', 'cpu:0'));
  assert.not.ok(fl.sameDevice('cpu:1', 'cpu:2'));
  assert.is(fl.deviceIndex('cpu:2'), 2);
  assert.is(fl.deviceIndex('cpu'), 0);
});

test('device errors are flockml errors, named by the op', () => {
  for (const call of [
    () => fl.zeros([2], { device: 'tpu' }),
    () => fl.zeros([2], { device: 2 as never }),
    () => fl.setCpuDeviceCount(0),
    () => fl.syncSync('cpu:9'),
    () => fl.cuda.memoryStats(99),
  ]) {
    try {
      call();
      assert.unreachable('expected ERR_DEVICE');
    } catch (e) {
      assert.ok(fl.errors.isFlockError(e), String(e));
      assert.instance(e, fl.FlockTypeError);
      assert.is((e as fl.FlockTypeError).code, 'ERR_DEVICE');
    }
  }
  expectError(
    () => fl.syncSync(Symbol('d') as never),
    TypeError,
    'ERR_DEVICE',
    /^syncSync: device must be a string like .*, got a Symbol$/,
  );
  expectError(
    () => fl.cuda.memoryStats(Symbol('i') as never),
    TypeError,
    'ERR_ARG',
    /^memoryStats: index must be an integer ≥ 0, got a Symbol$/,
  );
  expectError(() => fl.cuda.memoryStats(-1), RangeError, 'ERR_RANGE', /^memoryStats: index must be an integer ≥ 0, got -1$/);
});

test('ops run on every device and give the same results as on cpu', () => {
  const a = fl.randn([37, 29]);
  const b = fl.randn([29, 11]);
  const want = refMatmul(values(a), values(b), 37, 11, 29);
  for (const d of fl.cpuDevices()) {
    const c = a.to(d).matmul(b.to(d)).relu().add(1);
    assert.is(c.device, d);
    close(
      values(c),
      Array.from(want, (v) => Math.max(v, 0) + 1),
      1e-5,
      1e-5,
      d,
    );
    assert.is(c.sum().device, d);
  }
});

test('an op on tensors of two devices throws ERR_DEVICE naming both', () => {
  const a = fl.ones([3], { device: 'cpu' });
  const b = fl.ones([3], { device: 'cpu:1' });
  expectError(() => a.add(b), TypeError, 'ERR_DEVICE', /cpu and cpu:1/);
  expectError(
    () => fl.ones([2, 3], { device: 'cpu:2' }).matmul(fl.ones([3, 2], { device: 'cpu:3' })),
    TypeError,
    'ERR_DEVICE',
    /cpu:2.*cpu:3/,
  );
});

test('copy_ takes a source on another device, as torch.Tensor.copy_ does', async () => {
  const src = fl.tensor([1, 2, 3], { device: 'cpu:1' });
  const dst = fl.zeros([3], { device: 'cpu:2' }).copy_(src);
  assert.is(dst.device, 'cpu:2');
  assert.equal(Array.from((await dst.data()) as Float32Array), [1, 2, 3]);
});

test('.to() between CPU devices copies every dtype', () => {
  for (const dtype of ['f32', 'f64', 'i64', 'i32', 'u8', 'bool', 'bf16'] as const) {
    const x = fl.tensor([1, 0, 3, 4, 5], { dtype });
    const y = x.to('cpu:1').to('cpu:2').to('cpu:3').to('cpu');
    assert.is(y.dtype, dtype);
    assert.equal(values(y), values(x), dtype);
  }
});

test('a copy waits for its producer and does not block the JS thread; other devices keep running', async () => {
  const { release } = await blockCpu0();
  const a = fl.arange(0, 100_000, 1, { dtype: 'f64' });
  const produced = a.mul(2); // queued on cpu:0 behind the held barrier
  const moved = produced.to('cpu:1'); // returns at once: the JS thread is not waiting for cpu:0
  const after = moved.add(1); // queued on cpu:1 behind the copy
  const e = fl.Event.record('cpu:1');
  // cpu:2 is independent and runs now.
  const other = fl.ones([1000], { device: 'cpu:2' }).sum();
  assert.is(values(other)[0], 1000);
  await new Promise((r) => setTimeout(r, 50));
  assert.not.ok(e.query(), 'cpu:1 ran past a copy whose source was not produced yet');
  await release();
  await e.synchronize();
  const got = await after.data();
  for (let i = 0; i < 100_000; i += 997) assert.is(got[i], 2 * i + 1);
});

test('a copy reads its source before later in-place work on the source device', () => {
  const x = fl.full([50_000], 7);
  const y = x.to('cpu:2');
  x.copy_(fl.full([50_000], -1));
  assert.ok(values(y).every((v) => v === 7));
  assert.ok(values(x).every((v) => v === -1));
});

test('copies round a ring of devices, with in-place writes after each copy', () => {
  const devices = fl.cpuDevices();
  let x = fl.arange(0, 4096, 1, { dtype: 'f64' });
  for (let i = 1; i <= 40; i++) {
    const src = x;
    x = src.to(devices[i % devices.length]).add(1);
    src.copy_(fl.full([4096], -1, { dtype: 'f64', device: src.device })); // must not reach the copy
  }
  const got = values(x);
  assert.is(x.device, devices[0]);
  for (let i = 0; i < 4096; i += 127) assert.is(got[i], i + 40);
});

test('events order work across devices', async () => {
  const { release } = await blockCpu0();
  const src = fl.zeros([1000]);
  src.copy_(fl.full([1000], 5)); // on cpu:0, held
  const e = fl.Event.record('cpu');
  const dst = fl.zeros([1000], { device: 'cpu:1' });
  e.wait('cpu:1');
  const marker = fl.Event.record('cpu:1');
  await new Promise((r) => setTimeout(r, 30));
  assert.not.ok(e.query());
  assert.not.ok(marker.query(), 'work queued on cpu:1 after wait() ran before the event');
  await release();
  await marker.synchronize();
  assert.ok(e.query());
  assert.is(values(dst)[0], 0);
  expectError(() => fl.Event.record('cuda:0'), TypeError, 'ERR_DEVICE', /CPU devices/);
  expectError(() => e.wait('cpu:9'), TypeError, 'ERR_DEVICE', /out of range/);
});

test('memory() reports each device; emptyCache per device', () => {
  fl.syncSync('cpu:2');
  const before = fl.memory();
  assert.equal(
    Object.keys(before).filter((k) => k.startsWith('cpu')),
    ['cpu', 'cpu:1', 'cpu:2', 'cpu:3'],
  );
  for (const k of ['cpu', 'cpu:1', 'cpu:2', 'cpu:3'])
    for (const f of ['tensors', 'bytes', 'peakBytes', 'storages', 'cachedBytes']) assert.type(before[k][f as 'bytes'], 'number');
  const t = fl.zeros([1 << 20], { device: 'cpu:2' });
  fl.syncSync('cpu:2'); // a CPU tensor takes its memory when its kernel runs
  const mid = fl.memory();
  assert.is(mid['cpu:2'].tensors, before['cpu:2'].tensors + 1);
  assert.is(mid['cpu:2'].bytes, before['cpu:2'].bytes + 4 * (1 << 20));
  assert.is(mid.cpu.bytes, before.cpu.bytes);
  assert.is(mid['cpu:1'].bytes, before['cpu:1'].bytes);
  t.dispose();
  fl.syncSync('cpu:2');
  const after = fl.memory();
  assert.is(after['cpu:2'].bytes, before['cpu:2'].bytes);
  assert.ok(after['cpu:2'].cachedBytes >= 4 * (1 << 20), 'the released block is cached on cpu:2');
  assert.is(fl.emptyCache('cpu:2'), after['cpu:2'].cachedBytes);
  assert.is(fl.memory()['cpu:2'].cachedBytes, 0);
});

test('sync, syncSync and ready take CPU devices', async () => {
  const x = fl.randn([200, 200], { device: 'cpu:3' }).matmul(fl.randn([200, 200], { device: 'cpu:3' }));
  await fl.sync('cpu:3');
  fl.syncSync('cpu:1');
  await fl.ready('cpu:3');
  await fl.ready();
  assert.equal(x.shape, [200, 200]);
  expectError(() => fl.syncSync('cpu:5'), TypeError, 'ERR_DEVICE');
});

test('save and load tensors of several devices; load onto cpu:N', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'flockml-vdev-'));
  try {
    const a = fl.arange(0, 1000, 1, { device: 'cpu:1' }).mul(3);
    const b = fl.full([7], 2.5, { device: 'cpu:3' });
    const path = join(dir, 'm.safetensors');
    await fl.save({ a, b, c: fl.ones([2]) }, path);
    const back = await fl.load(path, { device: 'cpu:2' });
    assert.is(back.a.device, 'cpu:2');
    close(values(back.a), values(a));
    close(values(back.b), values(b));
    fl.saveSync({ a, b }, path);
    const sync = fl.loadSync(path, { device: 'cpu:1' });
    assert.is(sync.b.device, 'cpu:1');
    close(values(sync.a), values(a));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the profiler names each device stream', async () => {
  const prof = fl.profiler.start({ activities: ['cpu'] });
  fl.ones([64], { device: 'cpu:1' }).add(1).to('cpu:2').mul(2);
  await fl.sync('cpu:2');
  await fl.sync('cpu:1');
  prof.stop();
  const rows = prof.events();
  const streams = new Set(rows.map((r) => r.args?.stream));
  assert.ok(streams.has('cpu:1'), `streams: ${[...streams]}`);
  assert.ok(streams.has('cpu:2'), `streams: ${[...streams]}`);
});

test('autograd through copies between devices; TensorDataset on cpu:1', () => {
  const w = fl.tensor([1, 2, 3], { requiresGrad: true });
  const y = w
    .to('cpu:1')
    .mul(fl.tensor([4, 5, 6], { device: 'cpu:1' }))
    .sum();
  assert.is(y.device, 'cpu:1');
  y.backward();
  assert.is(w.grad!.device, 'cpu');
  assert.equal(values(w.grad!), [4, 5, 6]);
  const ds = new fl.data.TensorDataset(fl.arange(0, 10, 1, { device: 'cpu:1' }), fl.arange(0, 20, 2, { device: 'cpu:1' }));
  const [x0, y0] = ds.getBatch([3, 1]);
  assert.is(x0.device, 'cpu:1');
  assert.equal(values(y0), [6, 2]);
});

test('intra-op threads are shared among devices', () => {
  assert.is(fl.getNumThreads(), native.buildInfo().threads);
});

test.run();
