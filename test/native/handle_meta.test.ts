/**
 * The metadata every handle carries (`handle.meta`): the same as native.meta reports, frozen,
 * shared by handles of one shape, dtype and device, right after the cache of recent ones evicts,
 * and enough for a Tensor, so that an op makes one native call (native.meta is never called).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib';
import { native, type NativeDType, type NativeTensor } from '../../lib/native';

test('an op result carries the metadata native.meta reports, frozen', () => {
  const cases: [number[], NativeDType][] = [
    [[], 'f32'],
    [[16], 'f32'],
    [[2, 3], 'f64'],
    [[0, 5], 'i64'],
    [[4, 1, 3], 'bool'],
    [[7], 'bf16'],
  ];
  for (const [shape, dtype] of cases) {
    const h = native.full(shape, dtype, 'cpu', 0);
    const checked = native.meta(h);
    assert.equal([...h.meta.shape], checked.shape, `shape of ${dtype} ${JSON.stringify(shape)}`);
    assert.is(h.meta.dtype, checked.dtype);
    assert.is(h.meta.device, checked.device);
    assert.ok(Object.isFrozen(h.meta), 'meta frozen');
    assert.ok(Object.isFrozen(h.meta.shape), 'shape frozen');
    native.dispose(h);
  }
});

test('handles of one shape, dtype and device share one metadata object; others do not', () => {
  const a = fl.zeros([3, 4]);
  const b = fl.ones([3, 4]);
  assert.is(a.handle.meta, b.handle.meta);
  assert.is(a.shape, b.shape);
  const c = fl.zeros([3, 4], { dtype: 'f64' });
  const d = fl.zeros([4, 3]);
  assert.is.not(a.handle.meta, c.handle.meta);
  assert.is.not(a.handle.meta, d.handle.meta);
  assert.equal([c.dtype, [...d.shape]], ['f64', [4, 3]]);
  for (const t of [a, b, c, d]) t.dispose();
});

test('metadata stays right when far more shapes are used than the cache holds', () => {
  const made: [number[], fl.Tensor][] = [];
  for (let i = 0; i < 300; i++) {
    const shape = [1 + (i % 17), 1 + Math.floor(i / 17)];
    made.push([shape, fl.zeros(shape, { dtype: i % 2 ? 'f32' : 'i32' })]);
  }
  for (const [shape, t] of made) {
    assert.equal([...t.shape], shape);
    assert.equal(native.meta(t.handle).shape, shape);
    assert.is(t.dtype, native.meta(t.handle).dtype);
    t.dispose();
  }
});

test('building tensors from op results makes no native.meta call', () => {
  const original = native.meta;
  let calls = 0;
  (native as { meta: typeof native.meta }).meta = (h: NativeTensor) => {
    calls++;
    return original(h);
  };
  try {
    const a = fl.randn([16]);
    const b = fl.randn([16]);
    fl.tidy(() => {
      a.add(b).mul(b).relu().sum();
      fl.randn([16, 16]).matmul(fl.randn([16, 16]));
    });
    a.dispose();
    b.dispose();
  } finally {
    (native as { meta: typeof native.meta }).meta = original;
  }
  assert.is(calls, 0);
});

test('a handle without metadata goes through native.meta, which refuses what is no live handle', () => {
  const Ctor = fl.Tensor as unknown as new (h: unknown) => fl.Tensor;
  const bare = new native.NativeTensor();
  for (const [h, code] of [
    [undefined, 'ERR_ARG'],
    [{}, 'ERR_ARG'],
    [bare, 'ERR_DISPOSED'],
  ] as const) {
    try {
      new Ctor(h);
      assert.unreachable('should have thrown');
    } catch (e) {
      assert.is((e as { code?: string }).code, code);
    }
  }
});

test('a disposed tensor keeps its metadata', () => {
  const t = fl.zeros([2, 5], { dtype: 'i64' });
  t.dispose();
  assert.equal([[...t.shape], t.dtype, t.device], [[2, 5], 'i64', 'cpu']);
});

test('a disposed handle is unwrapped: every use refuses it with ERR_DISPOSED, disposing again does nothing', () => {
  const h = native.full([3], 'f32', 'cpu', 1);
  const other = native.full([3], 'f32', 'cpu', 2);
  native.dispose(h);
  native.dispose(h);
  assert.ok(native.isDisposed(h));
  for (const use of [
    () => native.meta(h),
    () => native.binary('add', h, other),
    () => native.binary('add', other, h),
    () => native.readSync(h),
  ]) {
    try {
      use();
      assert.unreachable('should have thrown');
    } catch (e) {
      assert.is((e as { code?: string }).code, 'ERR_DISPOSED');
    }
  }
  // The handle keeps its metadata (a Tensor made before disposal still prints its shape).
  assert.equal([...h.meta.shape], [3]);
  const sum = native.binary('add', other, other);
  assert.equal(Array.from(new Float32Array(native.readSync(sum))), [4, 4, 4]);
  native.dispose(sum);
  native.dispose(other);
});

test.run();
