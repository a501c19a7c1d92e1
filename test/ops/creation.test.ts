import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib/index';
import { close, expectError } from '../helpers/reference';
import { values } from '../helpers/values';

test('tensor() infers shape and dtype from nested arrays and typed arrays', () => {
  assert.is(
    fl.tensor([
      [1, 2],
      [3, 4],
    ]).dtype,
    'f32',
  );
  assert.is(fl.tensor([1.5]).dtype, 'f32');
  assert.is(fl.tensor([true, false]).dtype, 'bool');
  assert.equal(fl.tensor([[1, 2, 3]]).shape, [1, 3]);
  assert.is(fl.tensor(new Float64Array([1, 2])).dtype, 'f64');
  assert.is(fl.tensor(new Int32Array([1, 2])).dtype, 'i32');
  assert.equal(fl.tensor(new Float32Array(6), { shape: [2, 3] }).shape, [2, 3]);
  assert.equal(values(fl.tensor([1, 2], { dtype: 'f16' }).to('f32')), [1, 2]);
  assert.equal(fl.tensor(5).shape, []);
  expectError(() => fl.tensor([[1, 2], [3]]), RangeError, 'ERR_SHAPE', /ragged/);
  expectError(() => fl.tensor(['a'] as unknown as number[]), TypeError, 'ERR_ARG');
});

test('zeros, ones, full, eye, arange, linspace', () => {
  assert.equal(values(fl.zeros([2, 2])), [0, 0, 0, 0]);
  assert.equal(values(fl.ones([3], { dtype: 'i32' })), [1, 1, 1]);
  assert.equal(values(fl.full([2], 7.5)), [7.5, 7.5]);
  assert.equal(values(fl.eye(2, 3)), [1, 0, 0, 0, 1, 0]);
  assert.equal(values(fl.arange(5)), [0, 1, 2, 3, 4]);
  assert.equal(values(fl.arange(1, 2, 0.25)), [1, 1.25, 1.5, 1.75]);
  close(values(fl.linspace(0, 1, 5)), [0, 0.25, 0.5, 0.75, 1]);
  expectError(() => fl.arange(0, 1, 0), TypeError, 'ERR_ARG');
  expectError(() => fl.zeros([2, -1]), RangeError, 'ERR_SHAPE');
  expectError(() => fl.zeros([2 ** 40, 2 ** 20]), RangeError, 'ERR_OOM');
});

test('creation ops follow PyTorch dtype rules: arange of integers and randint give i64, the rest f32', () => {
  assert.is(fl.arange(5).dtype, 'i64');
  assert.is(fl.arange(0, 2, 0.5).dtype, 'f32');
  assert.is(fl.arange(5, undefined, 1, { dtype: 'float32' }).dtype, 'f32');
  assert.is(fl.randint(0, 3, [2]).dtype, 'i64');
  assert.is(fl.randint(0, 3, [2], { dtype: 'int' }).dtype, 'i32');
  for (const t of [
    fl.zeros([1]),
    fl.ones([1]),
    fl.full([1], 2),
    fl.eye(2),
    fl.linspace(0, 1, 3),
    fl.rand([1]),
    fl.randn([1]),
    fl.bernoulli([1], 0.5),
  ])
    assert.is(t.dtype, 'f32');
  assert.is(fl.full([1], true).dtype, 'bool');
  assert.is(fl.zerosLike(fl.arange(3)).dtype, 'i64');
  assert.is(fl.onesLike(fl.arange(3), { dtype: 'double' }).dtype, 'f64');
});

test("options as the last argument wherever the numbers end, as PyTorch's keyword arguments: arange(0, 6, { dtype }), eye(3, { dtype })", () => {
  const a = fl.arange(0, 6, { dtype: 'f64' });
  assert.is(a.dtype, 'f64');
  assert.equal(a.tolistSync(), [0, 1, 2, 3, 4, 5]);
  assert.is(fl.arange(4, { dtype: 'f32' }).dtype, 'f32');
  assert.equal(fl.arange(4, { dtype: 'f32' }).tolistSync(), [0, 1, 2, 3]);
  assert.equal(fl.arange(1, 7, 2, { dtype: 'i32' }).tolistSync(), [1, 3, 5]);
  assert.equal(fl.arange(1, 7, 2).tolistSync(), [1, 3, 5]);
  assert.is(fl.arange(1, 7, undefined, { dtype: 'f64' }).dtype, 'f64');
  const e = fl.eye(2, { dtype: 'f64' });
  assert.is(e.dtype, 'f64');
  assert.equal(e.tolistSync(), [
    [1, 0],
    [0, 1],
  ]);
  assert.equal(fl.eye(2, 3).shape, [2, 3]);
  expectError(() => fl.arange(0, { dtype: 'f64' } as never, 2), TypeError, 'ERR_ARG', /must come last/);
  expectError(() => fl.arange(0, 6, { dtpye: 'f64' } as never), TypeError, 'ERR_ARG', /did you mean 'dtype'/);
  expectError(() => fl.arange(fl.ones([1]) as never), TypeError, 'ERR_ARG', /end must be a finite number, got an object \(Tensor\)/);
});

test('eye rejects negative or fractional sizes with ERR_RANGE', () => {
  expectError(() => fl.eye(-3), RangeError, 'ERR_RANGE', /^eye: n must be a non-negative integer, got number -3$/);
  expectError(() => fl.eye(2, -1), RangeError, 'ERR_RANGE', /eye: m must/);
  expectError(() => fl.eye(1.5), RangeError, 'ERR_RANGE');
  assert.equal(fl.eye(0).shape, [0, 0]);
});

test('creation errors name the op the user called, once', () => {
  const bad = { dtype: 'f33' } as unknown as fl.TensorOptions;
  expectError(() => fl.zeros([2], bad), TypeError, 'ERR_DTYPE', /^zeros: unknown dtype 'f33'/);
  expectError(() => fl.ones([2], bad), TypeError, 'ERR_DTYPE', /^ones: /);
  expectError(() => fl.zerosLike(fl.zeros([1]), bad), TypeError, 'ERR_DTYPE', /^zerosLike: /);
  expectError(() => fl.eye(2, 2, bad), TypeError, 'ERR_DTYPE', /^eye: /);
  expectError(
    () => fl.zeros([2], { dtyp: 'f32' } as unknown as fl.TensorOptions),
    TypeError,
    'ERR_ARG',
    /^zeros: unknown option 'dtyp' \(did you mean 'dtype'\?\)/,
  );
  expectError(() => fl.ones([2], { dtype: 'i64', requiresGrad: true }), TypeError, 'ERR_DTYPE', /^ones: only floating tensors/);
});

test('scalars given to full, fill-like ops and arithmetic must fit an integer dtype (ERR_RANGE)', () => {
  expectError(() => fl.full([2], 300, { dtype: 'u8' }), RangeError, 'ERR_RANGE', /^full: value 300 is out of range for u8 \[0, 255\]$/);
  expectError(() => fl.full([2], NaN, { dtype: 'i64' }), RangeError, 'ERR_RANGE', /full: value NaN/);
  expectError(() => fl.full([2], -Infinity, { dtype: 'i32' }), RangeError, 'ERR_RANGE');
  expectError(() => fl.full([2], 2 ** 63, { dtype: 'long' }), RangeError, 'ERR_RANGE', /out of range for i64/);
  expectError(
    () => fl.zeros([2], { dtype: 'i32' }).maskedFill(fl.tensor([true, false]), 3e9),
    RangeError,
    'ERR_RANGE',
    /^maskedFill: value 3000000000/,
  );
  expectError(() => fl.zeros([2], { dtype: 'u8' }).add(-1), RangeError, 'ERR_RANGE', /^add: value -1 is out of range for u8/);
  expectError(() => fl.arange(0, 300, 1, { dtype: 'u8' }), RangeError, 'ERR_RANGE', /^arange: value 299/);
  expectError(() => fl.randint(0, 2 ** 31 + 1, [2], { dtype: 'i32' }), RangeError, 'ERR_RANGE', /^randint: /);
  assert.equal(values(fl.full([2], 255, { dtype: 'u8' })), [255, 255]);
  assert.equal(values(fl.full([1], -7.9, { dtype: 'i32' })), [-7]);
  assert.equal(values(fl.full([1], NaN)), [NaN]);
});

test('random draws are reproducible with manualSeed and have the right moments', () => {
  fl.manualSeed(42);
  const a = values(fl.rand([1000]));
  const n = values(fl.randn([20000]));
  fl.manualSeed(42);
  assert.equal(values(fl.rand([1000])), a);
  assert.ok(a.every((v) => v >= 0 && v < 1));
  const mean = n.reduce((s, v) => s + v, 0) / n.length;
  const sd = Math.sqrt(n.reduce((s, v) => s + (v - mean) ** 2, 0) / n.length);
  assert.ok(Math.abs(mean) < 0.03, `mean ${mean}`);
  assert.ok(Math.abs(sd - 1) < 0.03, `sd ${sd}`);
  const r = values(fl.randint(3, 7, [500]));
  assert.ok(r.every((v) => v >= 3 && v < 7 && Number.isInteger(v)));
  assert.equal(new Set(r).size, 4);
  const b = values(fl.bernoulli([4000], 0.25));
  const p = b.reduce((s, v) => s + v, 0) / b.length;
  assert.ok(Math.abs(p - 0.25) < 0.03, `p ${p}`);
});

test('successive draws differ; the generator state can be saved and restored', () => {
  const s = fl.getRngState();
  const a = values(fl.randn([8]));
  const b = values(fl.randn([8]));
  assert.not.equal(a, b);
  fl.setRngState(s);
  assert.equal(values(fl.randn([8])), a);
});

test.run();
