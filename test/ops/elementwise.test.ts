import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib/index';
import { close, expectError } from '../helpers/reference';
import { values } from '../helpers/values';

fl.manualSeed(11);
const erf = (x: number): number => {
  // Abramowitz-Stegun 7.1.26 is too coarse; integrate the series instead (|x| small here).
  let sum = 0,
    term = x;
  for (let n = 0; n < 60; n++) {
    sum += term / (2 * n + 1);
    term *= (-x * x) / (n + 1);
  }
  return (2 / Math.sqrt(Math.PI)) * sum;
};

const unaryRefs: [string, (t: fl.Tensor) => fl.Tensor, (x: number) => number][] = [
  ['neg', (t) => t.neg(), (x) => -x],
  ['exp', (t) => t.exp(), Math.exp],
  ['log', (t) => t.abs().add(0.1).log(), (x) => Math.log(Math.abs(x) + 0.1)],
  ['sqrt', (t) => t.abs().sqrt(), (x) => Math.sqrt(Math.abs(x))],
  ['rsqrt', (t) => t.abs().add(0.1).rsqrt(), (x) => 1 / Math.sqrt(Math.abs(x) + 0.1)],
  ['abs', (t) => t.abs(), Math.abs],
  ['sign', (t) => t.sign(), Math.sign],
  ['tanh', (t) => t.tanh(), Math.tanh],
  ['sigmoid', (t) => t.sigmoid(), (x) => 1 / (1 + Math.exp(-x))],
  ['relu', (t) => t.relu(), (x) => Math.max(0, x)],
  ['gelu', (t) => t.gelu(), (x) => 0.5 * x * (1 + erf(x / Math.SQRT2))],
  ['gelu tanh', (t) => t.gelu('tanh'), (x) => 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x ** 3)))],
  ['silu', (t) => t.silu(), (x) => x / (1 + Math.exp(-x))],
  ['clamp', (t) => t.clamp(-0.5, 0.7), (x) => Math.min(0.7, Math.max(-0.5, x))],
  ['square', (t) => t.square(), (x) => x * x],
];

for (const [name, f, ref] of unaryRefs) {
  test(`${name} matches f64 reference (f32, odd size 1025)`, () => {
    const x = fl.randn([1025]);
    close(values(f(x)), values(x).map(ref), 2e-6, 2e-6, name);
  });
}

test('unary ops on bf16 and f16 compute in f32', () => {
  const x = fl.tensor([-1.5, 0.25, 2, 3.75]);
  for (const dt of ['bf16', 'f16'] as const) close(values(x.to(dt).exp().to('f32')), values(x).map(Math.exp), 1e-2, 1e-2, dt);
});

test('binary ops broadcast like NumPy', () => {
  const a = fl.tensor([[1], [2], [3]], { dtype: 'f32' }); // [3,1]
  const b = fl.tensor([10, 20, 30, 40], { dtype: 'f32' }); // [4]
  assert.equal(a.add(b).shape, [3, 4]);
  assert.equal(values(a.add(b)), [11, 21, 31, 41, 12, 22, 32, 42, 13, 23, 33, 43]);
  assert.equal(values(b.sub(a)).slice(0, 4), [9, 19, 29, 39]);
  assert.equal(values(a.mul(b)).slice(8), [30, 60, 90, 120]);
  close(values(a.div(b)).slice(0, 2), [0.1, 0.05]);
  assert.equal(values(fl.tensor([2, 3], { dtype: 'f32' }).pow(fl.tensor([3, 2], { dtype: 'f32' }))), [8, 9]);
  assert.equal(values(fl.maximum(fl.tensor([1, 5], { dtype: 'f32' }), fl.tensor([3, 2], { dtype: 'f32' }))), [3, 5]);
  assert.equal(values(fl.minimum(fl.tensor([1, 5], { dtype: 'f32' }), 2)), [1, 2]);
});

test('non-contiguous broadcast over middle dims', () => {
  const a = fl.arange(24, undefined, 1, { dtype: 'f64' }).reshape(2, 3, 4);
  const b = fl.tensor([[[100]], [[200]]], { dtype: 'f64' }); // [2,1,1]
  const c = fl.tensor([[1], [2], [3]], { dtype: 'f64' }); // [3,1]
  const out = values(a.add(b).add(c));
  assert.is(out[0], 101);
  assert.is(out[23], 23 + 200 + 3);
  assert.is(out[4], 4 + 100 + 2);
});

test('comparisons give bool; where selects', () => {
  const a = fl.tensor([1, 2, 3]),
    b = fl.tensor([3, 2, 1]);
  for (const [op, want] of [
    ['eq', [0, 1, 0]],
    ['ne', [1, 0, 1]],
    ['lt', [1, 0, 0]],
    ['le', [1, 1, 0]],
    ['gt', [0, 0, 1]],
    ['ge', [0, 1, 1]],
  ] as const) {
    const r = (a as unknown as Record<string, (o: fl.Tensor) => fl.Tensor>)[op](b);
    assert.is(r.dtype, 'bool');
    assert.equal(values(r), want, op);
  }
  assert.equal(values(fl.where(a.gt(1), a, b)), [3, 2, 3]);
  assert.equal(values(a.maskedFill(a.eq(2), -1)), [1, -1, 3]);
});

test('dtype promotion follows PyTorch', () => {
  assert.is(fl.tensor([1, 2], { dtype: 'i64' }).add(1).dtype, 'i64');
  assert.is(fl.tensor([1, 2], { dtype: 'i64' }).add(0.5).dtype, 'f32');
  assert.is(fl.tensor([1, 2], { dtype: 'i64' }).div(2).dtype, 'f32');
  assert.is(fl.tensor([1.5]).add(fl.tensor([1.5], { dtype: 'f64' })).dtype, 'f64');
  assert.is(fl.tensor([1.5], { dtype: 'bf16' }).add(fl.tensor([1], { dtype: 'f16' })).dtype, 'f32');
  assert.is(fl.tensor([1], { dtype: 'i32' }).add(fl.tensor([1.5], { dtype: 'f16' })).dtype, 'f16');
});

test('casts round-trip and saturate sensibly', () => {
  const x = fl.tensor([1.5, -2.25, 3e5, 0.1]);
  close(values(x.to('f64')), [1.5, -2.25, 3e5, 0.10000000149011612], 0, 0);
  assert.equal(values(x.to('i32')), [1, -2, 300000, 0]);
  assert.equal(values(x.to('bool')), [1, 1, 1, 1]);
  close(values(x.to('bf16').to('f32')), [1.5, -2.25, 299008, 0.10009765625], 0, 0);
  close(values(x.to('f16').to('f32')), [1.5, -2.25, Infinity, 0.0999755859375], 0, 0);
});

test('NaN propagates through maximum and max', () => {
  const x = fl.tensor([1, NaN, 3]);
  assert.ok(Number.isNaN(values(fl.maximum(x, fl.tensor([0, 0, 0])))[1]));
  assert.ok(Number.isNaN(x.max().itemSync()));
});

test('errors name the op and shapes', () => {
  expectError(() => fl.ones([2, 3]).add(fl.ones([4])), RangeError, 'ERR_SHAPE', /\[2,3\].*\[4\]/);
  expectError(() => fl.ones([2]).add('x' as unknown as number), TypeError, 'ERR_ARG');
  expectError(() => fl.ones([2]).gelu('fast' as 'tanh'), TypeError, 'ERR_ARG');
  expectError(() => fl.ones([2]).clamp(NaN, 1), TypeError, 'ERR_ARG');
  expectError(() => fl.ones([2]).maskedFill(fl.ones([2]), 0), TypeError, 'ERR_DTYPE');
});

test.run();
