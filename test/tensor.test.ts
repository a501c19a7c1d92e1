import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Worker } from 'node:worker_threads';
import * as fl from '../lib/index';
import { expectError } from './helpers/reference';

test('metadata, data(), item(), toArray()', async () => {
  const t = fl.tensor([[1.5, 2], [3, 4]]);
  assert.equal(t.shape, [2, 2]);
  assert.is(t.dtype, 'f32');
  assert.is(t.device, 'cpu');
  assert.is(t.size, 4);
  assert.is(t.ndim, 2);
  assert.instance(await t.data(), Float32Array);
  assert.equal(Array.from(await t.data(), Number), [1.5, 2, 3, 4]);
  assert.is(await t.sum().item(), 10.5);
  assert.equal(t.toArray(), [[1.5, 2], [3, 4]]);
  assert.instance(fl.tensor([1n as unknown as number].map(Number)).dataSync(), BigInt64Array);
  assert.equal(Array.from(fl.tensor([1, 2], { dtype: 'bf16' }).dataSync(), Number), [1, 2]);
  expectError(() => t.itemSync(), RangeError, 'ERR_SHAPE');
  assert.match(t.toString(), /shape=\[2, 2\].*f32/);
});

test('many pending data() promises resolve in order of queueing', async () => {
  const ps = Array.from({ length: 50 }, (_, i) => fl.full([3], i).data());
  const vals = await Promise.all(ps);
  vals.forEach((v, i) => assert.is(v[0], i));
});

test('a pending promise keeps the process alive; none pending lets it exit', async () => {
  const v = await fl.randn([300, 300]).matmul(fl.randn([300, 300])).sum().item();
  assert.ok(Number.isFinite(v));
});

test('cuda queries report no GPU without failing', () => {
  assert.type(fl.cuda.isAvailable(), 'boolean');
  assert.is(fl.cuda.deviceCount() >= 0, true);
  if (!fl.cuda.isAvailable()) expectError(() => fl.zeros([2], { device: 'cuda:0' }), TypeError, 'ERR_DEVICE');
  expectError(() => fl.zeros([2], { device: 'tpu' }), TypeError, 'ERR_DEVICE');
});

test('the addon loads and computes in several worker_threads at once', async () => {
  const src = `
    const { parentPort, workerData } = require('node:worker_threads');
    const n = require(workerData.addon);
    const a = n.full([64, 64], 'f32', 'cpu', 1);
    const c = n.matmul(a, a, false, false);
    n.read(n.reduce('sum', c, [], false)).then((b) => parentPort.postMessage(new Float32Array(b)[0]));`;
  const addon = require.resolve('../build/Release/flockml.node');
  const results = await Promise.all(
    [0, 1, 2].map(
      () =>
        new Promise<number>((resolve, reject) => {
          const w = new Worker(src, { eval: true, workerData: { addon } });
          w.once('message', (m) => {
            resolve(m as number);
            void w.terminate();
          });
          w.once('error', reject);
        }),
    ),
  );
  assert.equal(results, [64 * 64 * 64, 64 * 64 * 64, 64 * 64 * 64]);
  // the main thread's instance still works after the workers are gone
  assert.is(fl.ones([3]).sum().itemSync(), 3);
});

test('setNumThreads changes the intra-op pool', () => {
  const n = fl.getNumThreads();
  fl.setNumThreads(1);
  assert.is(fl.getNumThreads(), 1);
  assert.is(fl.ones([100, 100]).matmul(fl.ones([100, 100])).sum().itemSync(), 1e6);
  fl.setNumThreads(n);
  assert.is(fl.getNumThreads(), n);
});

test.run();
