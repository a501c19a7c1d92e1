/**
 * CPU memory is held in the stream's order: an op's output takes memory when its kernel runs and
 * gives it back when the last queued kernel that reads it has run, however far ahead the JS thread
 * has queued. The stream of cpu:0 is held back here by an event that waits for slow work on cpu:1,
 * so every op below is queued long before it runs.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../lib/index';
import { expectError } from './helpers/reference';

const MB = 2 ** 20;
fl.setCpuDeviceCount(2);

/** Queues slow work on cpu:1 and makes cpu:0's stream wait for it. */
function holdBackCpu0(): fl.Tensor {
  const big = fl.randn([768, 768], { device: 'cpu:1' });
  let h = big;
  for (let i = 0; i < 8; i++) h = h.matmul(big).mul(1e-3);
  fl.Event.record('cpu:1').wait('cpu:0');
  return h;
}

test('a step queued ahead peaks at what it needs at a time, not at everything it queued', async () => {
  const x = fl.ones([256, 1024]); // 1 MB
  await fl.sync();
  await fl.sync('cpu:1');
  const base = fl.memory().cpu.bytes;
  fl.resetPeakMemory('cpu');
  const slow = holdBackCpu0();
  // 40 iterations of 2 MB of temporaries each: 80 MB if every output took memory when queued.
  let acc = fl.zeros([256, 1024]);
  for (let i = 0; i < 40; i++) {
    const a = x.mul(i);
    const b = a.add(1);
    const next = acc.add(b);
    a.dispose();
    b.dispose();
    acc.dispose();
    acc = next;
  }
  const queuedBytes = fl.memory().cpu.bytes - base;
  await fl.sync();
  const peak = fl.memory().cpu.peakBytes - base;
  // The accumulator, its next value and two temporaries at a time, give or take one.
  assert.ok(peak <= 6 * MB, `peak above the inputs ${peak / MB} MB`);
  assert.ok(queuedBytes <= 6 * MB, `bytes while queued ${queuedBytes / MB} MB`);
  // sum over i of (i + 1) = 820 in every element
  const v = (await acc.toArray()) as number[][];
  assert.is(v.length, 256);
  assert.ok(v.every((row) => row.length === 1024 && row.every((e) => e === 820)));
  // The accumulator, and a few bytes of scalar operands.
  assert.ok(Math.abs(fl.memory().cpu.bytes - base - MB) < 4096);
  acc.dispose();
  slow.dispose();
  x.dispose();
});

test('a storage read on the JS thread before its kernel ran is the kernel output afterwards', async () => {
  const slow = holdBackCpu0();
  const t = fl.full([1000], 3);
  const u = t.mul(2);
  t.dispose();
  assert.equal(await u.toArray(), new Array(1000).fill(6));
  u.dispose();
  slow.dispose();
});

test('resetPeakMemory restarts the peak from the bytes in use and names bad devices', async () => {
  const big = fl.zeros([1024, 1024]);
  await fl.sync();
  big.dispose();
  await fl.sync();
  fl.resetPeakMemory();
  assert.is(fl.memory().cpu.peakBytes, fl.memory().cpu.bytes);
  expectError(() => fl.resetPeakMemory('tpu'), TypeError, 'ERR_DEVICE', /resetPeakMemory: invalid device 'tpu'/);
});

test.run();
