import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Worker } from 'node:worker_threads';
import { inspect } from 'node:util';
import * as fl from '../lib/index';
import { expectError } from './helpers/reference';

test('metadata, data(), item(), toArray()', async () => {
  const t = fl.tensor([
    [1.5, 2],
    [3, 4],
  ]);
  assert.equal(t.shape, [2, 2]);
  assert.is(t.dtype, 'f32');
  assert.is(t.device, 'cpu');
  assert.equal(t.size(), [2, 2]);
  assert.is(t.numel(), 4);
  assert.is(t.ndim, 2);
  assert.instance(await t.data(), Float32Array);
  assert.equal(Array.from(await t.data(), Number), [1.5, 2, 3, 4]);
  assert.is(await t.sum().item(), 10.5);
  assert.equal(t.toArray(), [
    [1.5, 2],
    [3, 4],
  ]);
  assert.instance(fl.tensor([1], { dtype: 'i64' }).dataSync(), BigInt64Array);
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
  const v = await fl
    .randn([300, 300])
    .matmul(fl.randn([300, 300]))
    .sum()
    .item();
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
  const { addonSource } = await import('../lib/native');
  const addon = addonSource.path; // the addon this process loaded (FLOCKML_NATIVE may name the simulator's)
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
  assert.is(
    fl
      .ones([100, 100])
      .matmul(fl.ones([100, 100]))
      .sum()
      .itemSync(),
    1e6,
  );
  fl.setNumThreads(n);
  assert.is(fl.getNumThreads(), n);
});

test('setNumThreads(0), negative or too many threads: ERR_RANGE (was ERR_INDEX); a non-number ERR_ARG', () => {
  const n = fl.getNumThreads();
  for (const bad of [0, -1, 1.5, 2000, Number.NaN])
    expectError(() => fl.setNumThreads(bad), RangeError, 'ERR_RANGE', /^setNumThreads: n must be an integer ≥ 1 and ≤ 1024/);
  expectError(() => fl.setNumThreads('4' as never), TypeError, 'ERR_ARG');
  assert.is(fl.getNumThreads(), n, 'a refused call leaves the pool as it was');
});

test('size() and numel() as in PyTorch', () => {
  const t = fl.zeros([2, 3, 4]);
  assert.equal(t.size(), [2, 3, 4]);
  assert.is(t.size(1), 3);
  assert.is(t.size(-1), 4);
  assert.is(t.size(-3), 2);
  assert.is(t.numel(), 24);
  assert.is(fl.tensor(5).numel(), 1);
  assert.equal(fl.tensor(5).size(), []);
  const s = t.size();
  s[0] = 9;
  assert.equal(t.shape, [2, 3, 4]);
  expectError(() => t.size(3), RangeError, 'ERR_INDEX', /^size: dim 3 is out of range for a tensor of 3 dimensions$/);
  expectError(() => t.size(-4), RangeError, 'ERR_INDEX');
  expectError(() => t.size(0.5), TypeError, 'ERR_ARG');
});

test('dtype follows the input type, never its values', () => {
  const ones = fl.tensor([1.0, 1.0]);
  assert.is(ones.dtype, 'f32');
  assert.is((ones.dataSync()[0] as number) + 1, 2);
  assert.is(
    fl.tensor([
      [1, 2],
      [3, 4.5],
    ]).dtype,
    'f32',
  );
  assert.is(fl.tensor(3).dtype, 'f32');
  assert.is(fl.tensor([]).dtype, 'f32');
  assert.is(fl.tensor([true, false]).dtype, 'bool');
  assert.is(fl.tensor(new Int32Array([1, 2])).dtype, 'i32');
  assert.is(fl.tensor(new BigInt64Array([1n, 2n])).dtype, 'i64');
  assert.is(fl.tensor(new Uint8Array([1, 2])).dtype, 'u8');
  assert.is(fl.tensor(new Float64Array([1, 2])).dtype, 'f64');
  assert.is(fl.tensor(new Float32Array([1, 2])).dtype, 'f32');
  assert.is(fl.tensor([1, 2], { dtype: 'i64' }).dtype, 'i64');
  expectError(() => fl.tensor(new Int16Array([1]) as unknown as Int32Array), TypeError, 'ERR_DTYPE', /^tensor: Int16Array has no dtype/);
  // The documented way to get integer labels from plain numbers (the DataLoader's collate uses it).
  const labels = [3, 1, 2];
  assert.is(fl.tensor(labels, { dtype: labels.every(Number.isInteger) ? 'i64' : 'f32' }).dtype, 'i64');
});

test("PyTorch's dtype names are aliases everywhere; t.dtype reports the short name", () => {
  const names: [fl.DType, fl.CanonicalDType][] = [
    ['float32', 'f32'],
    ['float', 'f32'],
    ['float64', 'f64'],
    ['double', 'f64'],
    ['bfloat16', 'bf16'],
    ['float16', 'f16'],
    ['half', 'f16'],
    ['int32', 'i32'],
    ['int', 'i32'],
    ['int64', 'i64'],
    ['long', 'i64'],
    ['uint8', 'u8'],
    ['bool', 'bool'],
  ];
  for (const [alias, short] of names) {
    assert.is(fl.tensor([1, 0], { dtype: alias }).dtype, short, alias);
    assert.is(fl.zeros([1], { dtype: alias }).dtype, short, alias);
    assert.is(fl.ones([2]).to(alias).dtype, short, alias);
    assert.is(fl.ones([2]).to({ dtype: alias }).dtype, short, alias);
    assert.is(fl.canonicalDType(alias), short);
  }
  assert.is(fl.full([1], 2, { dtype: 'double' }).dtype, 'f64');
  assert.is(fl.nn.Linear !== undefined && new fl.nn.Linear(2, 2, { dtype: 'double' }).weight.dtype, 'f64');
  const typo = () =>
    fl.zeros([1], {
      // @ts-expect-error a dtype name that does not exist fails to compile
      dtype: 'float33',
    });
  expectError(typo, TypeError, 'ERR_DTYPE', /^zeros: unknown dtype 'float33' \(expected f32, f64, .*float32, .*long/);
});

test('requiresGrad_ on a non-floating tensor throws ERR_DTYPE', () => {
  for (const t of [fl.tensor([1, 2], { dtype: 'i64' }), fl.tensor(new Int32Array([1])), fl.tensor([true]), fl.tensor(new Uint8Array([1]))])
    expectError(
      () => t.requiresGrad_(),
      TypeError,
      'ERR_DTYPE',
      /^requiresGrad_: only floating tensors \(f32, f64, bf16, f16\) can require gradients, got (i64|i32|bool|u8)$/,
    );
  expectError(() => fl.tensor([1], { dtype: 'long', requiresGrad: true }), TypeError, 'ERR_DTYPE', /^tensor: only floating tensors/);
  expectError(() => new fl.nn.Parameter(fl.arange(3)), TypeError, 'ERR_DTYPE');
  const x = fl.tensor([1.0, 1.0]).requiresGrad_();
  x.mul(3).sum().backward();
  assert.equal(Array.from(x.grad!.dataSync() as Float32Array), [3, 3]);
});

test('JS values an integer dtype cannot hold throw ERR_RANGE naming the value and dtype', () => {
  expectError(
    () => fl.tensor([Infinity, NaN, 3e9], { dtype: 'i32' }),
    RangeError,
    'ERR_RANGE',
    /^tensor: value Infinity is out of range for i32 \[-2147483648, 2147483647\]$/,
  );
  expectError(() => fl.tensor([1, 3e9], { dtype: 'int32' }), RangeError, 'ERR_RANGE', /value 3000000000 .* i32/);
  expectError(() => fl.tensor([300], { dtype: 'u8' }), RangeError, 'ERR_RANGE', /^tensor: value 300 is out of range for u8 \[0, 255\]$/);
  expectError(() => fl.tensor([-1], { dtype: 'uint8' }), RangeError, 'ERR_RANGE', /value -1 .* u8/);
  expectError(() => fl.tensor([NaN], { dtype: 'i64' }), RangeError, 'ERR_RANGE', /value NaN .* i64/);
  expectError(() => fl.tensor([2 ** 63], { dtype: 'i64' }), RangeError, 'ERR_RANGE', /i64 \[-2\^63, 2\^63-1\]/);
  expectError(() => fl.tensor(new Float32Array([NaN]), { dtype: 'i32' }), RangeError, 'ERR_RANGE', /value NaN/);
  expectError(() => fl.tensor(new Int32Array([256]), { dtype: 'u8' }), RangeError, 'ERR_RANGE', /value 256/);
  expectError(() => fl.tensor(new BigInt64Array([2n ** 40n]), { dtype: 'i32' }), RangeError, 'ERR_RANGE', /value 1099511627776/);
  assert.equal(Array.from(fl.tensor([255, 0, 7.9], { dtype: 'u8' }).dataSync() as Uint8Array), [255, 0, 7]);
  assert.equal(Array.from(fl.tensor([-2147483648, 2147483647], { dtype: 'i32' }).dataSync() as Int32Array), [-2147483648, 2147483647]);
  assert.equal(Array.from(fl.tensor(new Float32Array([1.5, -2.5]), { dtype: 'i32' }).dataSync() as Int32Array), [1, -2]);
  assert.equal(Array.from(fl.tensor([NaN, 0, 2], { dtype: 'bool' }).dataSync() as Uint8Array), [1, 0, 1]);
});

test('t.to() takes a dtype, a device or { dtype, device }; anything else is ERR_ARG naming both', () => {
  const t = fl.tensor([1.5, 2]);
  assert.is(t.to('float64').dtype, 'f64');
  assert.is(t.to('i32').dtype, 'i32');
  assert.is(t.to('cpu'), t);
  assert.is(t.to('f32'), t);
  const both = t.to({ dtype: 'half', device: 'cpu' });
  assert.is(both.dtype, 'f16');
  assert.is(both.device, 'cpu');
  expectError(
    () => t.to('float33'),
    TypeError,
    'ERR_ARG',
    /^to: the string "float33" is neither a dtype \(f32, .*float32, long\) nor a device \('cpu', 'cuda', 'cuda:N'\) \(did you mean 'float32'\?\)/,
  );
  expectError(
    () => t.to({ dtype: 'f32', devise: 'cpu' } as unknown as { dtype: fl.DType }),
    TypeError,
    'ERR_ARG',
    /^to: unknown option 'devise'/,
  );
  expectError(() => t.to({ dtype: 'nope' as fl.DType }), TypeError, 'ERR_DTYPE', /^to: unknown dtype 'nope'/);
  expectError(() => t.to(7 as unknown as string), TypeError, 'ERR_ARG', /^to: number 7 is neither a dtype/);
  if (!fl.cuda.isAvailable()) expectError(() => t.to('cuda:0'), TypeError, 'ERR_DEVICE');
});

test('float(), double(), half(), bfloat16(), long(), int(), bool() are to(dtype) as in PyTorch', () => {
  const t = fl.tensor([1.5, 0, -2]);
  const cases: Array<[fl.Tensor, string]> = [
    [t.double(), 'f64'],
    [t.half(), 'f16'],
    [t.bfloat16(), 'bf16'],
    [t.long(), 'i64'],
    [t.int(), 'i32'],
    [t.bool(), 'bool'],
    [t.long().float(), 'f32'],
  ];
  for (const [u, dtype] of cases) assert.is(u.dtype, dtype);
  assert.is(t.float(), t, 'float() of an f32 tensor is itself, as to() is');
  assert.equal(t.long().tolistSync(), [1, 0, -2]);
  assert.equal(t.bool().tolistSync(), [true, false, true]);
  const w = fl.tensor([1, 2]).requiresGrad_();
  w.double().sum().backward();
  assert.equal(w.grad?.tolistSync(), [1, 1]);
});

test('tolist() and tolistSync() nest as torch: 0-d a value, 1-d an array, n-d arrays of arrays', async () => {
  assert.is(fl.tensor(2.5).tolistSync(), 2.5);
  assert.is(await fl.tensor(2.5).tolist(), 2.5);
  assert.equal(fl.tensor([1, 2]).tolistSync(), [1, 2]);
  const m = fl.arange(6, undefined, 1, { dtype: 'f64' }).reshape(1, 2, 3);
  assert.equal(await m.tolist(), [
    [
      [0, 1, 2],
      [3, 4, 5],
    ],
  ]);
  assert.equal(fl.zeros([2, 0]).tolistSync(), [[], []]);
  assert.is(fl.tensor(true).tolistSync(), true);
  assert.equal(await fl.tensor([true, false]).tolist(), [true, false]);
  assert.equal(fl.tensor([2 ** 53 - 1, -3], { dtype: 'i64' }).tolistSync(), [2 ** 53 - 1, -3]);
  const big = fl.tensor(new BigInt64Array([2n ** 60n]), { dtype: 'i64' });
  expectError(() => big.tolistSync(), RangeError, 'ERR_RANGE', /2\^53/);
  await big.tolist().then(
    () => assert.unreachable('expected a rejection'),
    (e) => assert.is(e.code, 'ERR_RANGE'),
  );
});

test('writes to shape, dtype, device and the other read-only properties throw ERR_ARG', () => {
  const t = fl.zeros([2, 3]);
  const loose = t as unknown as Record<string, unknown>;
  for (const name of ['shape', 'dtype', 'device', 'ndim', 'isLeaf', 'isDisposed', 'handle'])
    expectError(
      () => {
        loose[name] = name === 'shape' ? [3, 2] : 'x';
      },
      TypeError,
      'ERR_ARG',
      new RegExp(`${name} is read-only`),
    );
  assert.equal(t.shape, [2, 3]);
  assert.is(t.dtype, 'f32');
  // A sloppy-mode script (no 'use strict') would otherwise ignore the write silently.
  const sloppy = new Function('t', 't.shape = [6]; return t.shape;');
  expectError(() => sloppy(t), TypeError, 'ERR_ARG');
  t.requiresGrad = true;
  assert.is(t.requiresGrad, true, 'requiresGrad and grad stay writable');
});

test('console.log / util.inspect and toString show dtype, shape, device and the values of small tensors', () => {
  const t = fl.tensor([
    [1.5, 2],
    [3, 4],
  ]);
  assert.is(inspect(t), 'Tensor(shape=[2, 2], dtype=f32, device=cpu) [[1.5, 2], [3, 4]]');
  assert.is(String(t), inspect(t));
  assert.is(inspect(fl.tensor([1, 2], { dtype: 'long' })), 'Tensor(shape=[2], dtype=i64, device=cpu) [1, 2]');
  assert.is(inspect(fl.tensor([true, false])), 'Tensor(shape=[2], dtype=bool, device=cpu) [true, false]');
  assert.is(inspect(fl.tensor(0.1)), 'Tensor(shape=[], dtype=f32, device=cpu) 0.1');
  assert.is(inspect(fl.ones([1]).requiresGrad_()), 'Tensor(shape=[1], dtype=f32, device=cpu, requiresGrad) [1]');
  assert.match(inspect(fl.ones([1]).requiresGrad_().mul(2)), /gradFn=mul\) \[2\]$/);
  assert.is(inspect(fl.zeros([3, 7])), 'Tensor(shape=[3, 7], dtype=f32, device=cpu)');
  assert.match(inspect({ x: fl.zeros([2]) }), /x: Tensor\(shape=\[2\], dtype=f32, device=cpu\) \[0, 0\]/);
  const d = fl.ones([2]);
  d.dispose();
  assert.is(inspect(d), 'Tensor(shape=[2], dtype=f32, device=cpu, disposed)');
  assert.is(`${d}`, inspect(d));
});

test('a Parameter (a Tensor subclass with its own constructor) can call backward()', () => {
  const p = new fl.nn.Parameter(fl.tensor([2.0]));
  p.backward();
  assert.equal(Array.from(p.grad!.dataSync() as Float32Array), [1]);
  const q = new fl.nn.Parameter(fl.tensor([3.0]));
  q.mul(q).sum().backward();
  assert.equal(Array.from(q.grad!.dataSync() as Float32Array), [6]);
});

test('a kernel error names its op once', async () => {
  const x = fl.zeros([3]);
  const bad = x.gather(0, fl.tensor([7], { dtype: 'i64' }));
  let message = '';
  await bad.data().catch((e: Error) => (message = e.message));
  assert.is(message, 'gather: index 7 is out of range for a dimension of size 3');
});

test.run();
