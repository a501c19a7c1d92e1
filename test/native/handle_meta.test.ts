/**
 * Tensor handles are numbers naming slots of the addon's table (cpp/bindings/tensor_handle.h). An
 * op leaves its result's metadata in `native.returned` ([index into native.metas, handle]): the
 * same as native.meta reports, frozen, shared by handles of one shape, dtype and device, right
 * after the cache of recent ones evicts, and enough for a Tensor, so that an op makes one native
 * call (native.meta is never called). A slot's generation changes when it is reused, so a
 * disposed handle is refused even after its slot holds another tensor.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import * as fl from '../../lib';
import { raw } from '../helpers/reference';
import { native, type NativeDType, type NativeTensor, type NewTensor } from '../../lib/native';

const metaOf = (h: NewTensor) => {
  assert.is(native.returned[1], h, 'returned names the latest handle');
  return native.metas[native.returned[0]];
};

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
    const m = metaOf(h);
    const checked = native.meta(h);
    assert.is(m, checked, 'native.meta gives the same shared object');
    assert.equal([...m.shape], shape, `shape of ${dtype} ${JSON.stringify(shape)}`);
    assert.is(m.dtype, dtype);
    assert.is(m.device, 'cpu');
    assert.ok(Object.isFrozen(m), 'meta frozen');
    assert.ok(Object.isFrozen(m.shape), 'shape frozen');
    native.dispose(h);
  }
});

test('handles of one shape, dtype and device share one metadata object; others do not', () => {
  const a = fl.zeros([3, 4]);
  const b = fl.ones([3, 4]);
  assert.is(native.meta(a.handle), native.meta(b.handle));
  assert.is(a.shape, b.shape);
  const c = fl.zeros([3, 4], { dtype: 'f64' });
  const d = fl.zeros([4, 3]);
  assert.is.not(native.meta(a.handle), native.meta(c.handle));
  assert.is.not(native.meta(a.handle), native.meta(d.handle));
  assert.is.not(a.shape, d.shape);
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
  (native as { meta: typeof native.meta }).meta = (h: NativeTensor | NewTensor) => {
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

test('a Tensor made from any handle but the latest result asks native.meta, which refuses what is no live handle', () => {
  const Ctor = fl.Tensor as unknown as new (h: unknown) => fl.Tensor;
  const first = native.full([2, 3], 'f32', 'cpu', 1);
  const second = native.full([5], 'i32', 'cpu', 1);
  const t = new Ctor(first);
  assert.equal([[...t.shape], t.dtype], [[2, 3], 'f32'], 'metadata of the earlier handle, not of the latest');
  t.dispose();
  native.dispose(second);
  for (const [h, code] of [
    [undefined, 'ERR_ARG'],
    [{}, 'ERR_ARG'],
    [3, 'ERR_ARG'],
    [2 ** 48 + 0.5, 'ERR_ARG'],
    [2 ** 49 - 1, 'ERR_DISPOSED'],
    [first, 'ERR_DISPOSED'],
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

test('a disposed handle is refused by every use with ERR_DISPOSED, also once its slot holds another tensor; disposing again does nothing', () => {
  const h = raw(native.full([3], 'f32', 'cpu', 1));
  native.dispose(h);
  const other = raw(native.full([3], 'f32', 'cpu', 2)); // reuses h's slot
  assert.is((other - 2 ** 48) % 2 ** 24, (h - 2 ** 48) % 2 ** 24, 'the same slot');
  assert.is.not(other, h);
  native.dispose(h);
  assert.ok(native.isDisposed(h));
  assert.not.ok(native.isDisposed(other));
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
  const sum = native.binary('add', other, other);
  assert.equal(Array.from(new Float32Array(native.readSync(raw(sum)))), [4, 4, 4]);
  native.dispose(sum);
  native.dispose(other);
});

test('native.dispose takes an array of handles and skips disposed ones', () => {
  const before = native.memory().cpu.tensors;
  const hs = [native.full([4], 'f32', 'cpu', 1), native.full([2], 'i64', 'cpu', 1), native.full([], 'f64', 'cpu', 1)];
  assert.is(native.memory().cpu.tensors, before + 3);
  native.dispose(hs[1]);
  native.dispose(hs);
  assert.is(native.memory().cpu.tensors, before);
  for (const h of hs) assert.ok(native.isDisposed(h));
  try {
    native.dispose([hs[0], 'x' as unknown as NewTensor]);
    assert.unreachable('should have thrown');
  } catch (e) {
    assert.is((e as { code?: string }).code, 'ERR_ARG');
  }
});

test('an undisposed tensor outside any tidy scope is freed by the garbage collector; one inside a scope only when it leaves it', async () => {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  const settle = async () => {
    for (let i = 0; i < 5; i++) {
      gc();
      await new Promise((r) => setTimeout(r, 10));
    }
  };
  await settle();
  const before = native.memory().cpu.tensors;
  (() => {
    for (let i = 0; i < 50; i++) {
      const o = fl.ones([8]);
      o.add(o);
    }
  })();
  assert.is(native.memory().cpu.tensors, before + 100);
  await settle();
  assert.is(native.memory().cpu.tensors, before, 'freed by the collector');
  let kept: fl.Tensor | null = fl.tidy(() => fl.keep(fl.ones([8]).mul(2)));
  fl.tidy(() => fl.ones([3]));
  await settle();
  assert.is(native.memory().cpu.tensors, before + 1, 'the kept result lives while referenced');
  assert.equal(Array.from(kept.dataSync() as Float32Array), Array(8).fill(2));
  kept = null;
  await settle();
  assert.is(native.memory().cpu.tensors, before, 'and is freed once dropped');
});

test.run();
