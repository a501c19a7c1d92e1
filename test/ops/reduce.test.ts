import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib/index';
import { close, expectError, groupOf } from '../helpers/reference';
import { values } from '../helpers/values';
import { gradcheck, rnd } from '../helpers/gradcheck';

fl.manualSeed(21);

/** Reference reduction over dims of a row-major array, returning the kept-dims result. */
function refReduce(values: number[], shape: number[], dims: number[], f: (xs: number[]) => number): number[] {
  const outShape = shape.map((s, i) => (dims.includes(i) ? 1 : s));
  const n = outShape.reduce((a, b) => a * b, 1);
  const groups: number[][] = Array.from({ length: n }, () => []);
  const group = groupOf(shape, dims);
  values.forEach((v, lin) => {
    const o = group(lin);
    groups[o].push(v);
  });
  return groups.map(f);
}

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
const mean = (xs: number[]) => sum(xs) / xs.length;
const variance = (xs: number[], c = 1) => sum(xs.map((x) => (x - mean(xs)) ** 2)) / (xs.length - c);
const lse = (xs: number[]) => {
  const m = Math.max(...xs);
  return m + Math.log(sum(xs.map((x) => Math.exp(x - m))));
};

for (const [shape, dims] of [
  [[7], [0]],
  [[3, 5], [1]],
  [[3, 5], [0]],
  [
    [2, 3, 4],
    [0, 2],
  ],
  [
    [2, 3, 4],
    [1, 2],
  ],
  [[4, 130, 3], [1]],
  [[1025], [0]],
] as [number[], number[]][]) {
  test(`sum/mean/max/min/var/logsumexp over ${JSON.stringify(dims)} of ${JSON.stringify(shape)}`, () => {
    const x = fl.randn(shape, { dtype: 'f64' });
    const v = values(x);
    close(values(x.sum(dims)), refReduce(v, shape, dims, sum), 1e-12, 1e-12, 'sum');
    close(values(x.mean(dims, true)), refReduce(v, shape, dims, mean), 1e-12, 1e-12, 'mean');
    close(
      values(x.max(dims)),
      refReduce(v, shape, dims, (xs) => Math.max(...xs)),
      0,
      0,
      'max',
    );
    close(
      values(x.min(dims)),
      refReduce(v, shape, dims, (xs) => Math.min(...xs)),
      0,
      0,
      'min',
    );
    close(
      values(x.var(dims)),
      refReduce(v, shape, dims, (xs) => variance(xs)),
      1e-10,
      1e-12,
      'var',
    );
    close(
      values(x.std(dims, { correction: 0 })),
      refReduce(v, shape, dims, (xs) => Math.sqrt(variance(xs, 0))),
      1e-10,
      1e-12,
      'std',
    );
    close(values(x.logsumexp(dims)), refReduce(v, shape, dims, lse), 1e-12, 1e-12, 'logsumexp');
    const f32 = x.to('f32');
    close(values(f32.sum(dims)), refReduce(v, shape, dims, sum), 1e-5, 1e-5, 'sum f32');
  });
}

test('keepdim shapes and reduction of everything', () => {
  const x = fl.ones([2, 3, 4]);
  assert.equal(x.sum(1, true).shape, [2, 1, 4]);
  assert.equal(x.sum([0, 2]).shape, [3]);
  assert.equal(x.sum().shape, []);
  assert.is(x.sum().itemSync(), 24);
  assert.is(x.mean(-1).shape.length, 2);
});

test('argmax/argmin return i64 first occurrence', () => {
  const x = fl.tensor(
    [
      [1, 5, 5],
      [7, 0, 7],
    ],
    { dtype: 'f32' },
  );
  const am = x.argmax(1);
  assert.is(am.dtype, 'i64');
  assert.equal(values(am), [1, 0]);
  assert.equal(values(x.argmin(1)), [0, 1]);
  assert.equal(values(x.argmax()), [3]);
  assert.equal(x.argmax(0, true).shape, [1, 3]);
});

test('integer sums stay integer; mean of ints is float', () => {
  const x = fl.tensor(
    [
      [1, 2],
      [3, 4],
    ],
    { dtype: 'i64' },
  );
  assert.is(x.sum().dtype, 'i64');
  assert.is(x.sum().itemSync(), 10);
  assert.is(x.mean().dtype, 'f32');
  assert.is(x.mean().itemSync(), 2.5);
});

test('softmax and logSoftmax match the reference, stable for large logits', () => {
  const x = fl.tensor(
    [
      [1000, 1001, 1002],
      [-5, 0, 5],
    ],
    { dtype: 'f64' },
  );
  const rows = [
    [1000, 1001, 1002],
    [-5, 0, 5],
  ];
  const ref = rows.flatMap((r) => r.map((v) => Math.exp(v - lse(r))));
  close(values(x.softmax(1)), ref, 1e-12, 1e-15);
  close(
    values(x.logSoftmax(-1)),
    rows.flatMap((r) => r.map((v) => v - lse(r))),
    1e-12,
    1e-12,
  );
  const cols = fl.randn([3, 4, 5]);
  close(values(cols.softmax(1).sum(1)), new Array(15).fill(1), 1e-6, 1e-6);
});

test('max over an empty dim is an error; sum of empty is 0', () => {
  expectError(() => fl.zeros([0, 3]).max(0), RangeError, 'ERR_SHAPE');
  assert.equal(values(fl.zeros([0, 3]).sum(0)), [0, 0, 0]);
  expectError(() => fl.ones([2, 3]).sum(2), RangeError, 'ERR_INDEX', /dim 2/);
  expectError(() => fl.ones([2, 3]).sum([0, 0]), TypeError, 'ERR_ARG');
});

test('max/min along one dim give { values, indices }: first of ties, NaN wins, keepdim, 0-d', () => {
  const x = fl.tensor([
    [1, 5, 5, 2],
    [7, Number.NaN, 7, -1],
  ]);
  const m = x.max(1);
  assert.equal(values(m.values).slice(0, 1), [5]);
  assert.ok(Number.isNaN(values(m.values)[1]));
  assert.equal(values(m.indices), [1, 1]);
  assert.is(m.indices.dtype, 'i64');
  const n = fl.min(x, 0, true);
  assert.equal(n.values.shape, [1, 4]);
  assert.equal(values(n.indices), [0, 1, 0, 1]);
  assert.equal(values(fl.tensor([3, 1, 1]).min(-1).indices), [1]);
  const s = fl.tensor(4).max(0);
  assert.equal(s.values.shape, []);
  assert.equal(values(s.indices), [0]);
  // max(x) and max(x, dims[]) stay plain reductions.
  assert.is(fl.tensor([1, 9, 3]).max().itemSync(), 9);
  assert.equal(values(x.narrow(0, 0, 1).max([1])), [5]);
});

test('max(dim) gradient goes to the chosen index only (f64 gradcheck)', () => {
  assert.is(
    gradcheck(([a]) => a.max(1).values, [rnd([3, 4])]),
    null,
  );
  assert.is(
    gradcheck(([a]) => a.min(0, true).values, [rnd([3, 4])]),
    null,
  );
  const t = fl.tensor([2, 5, 5], { dtype: 'f64' }).requiresGrad_();
  t.max(0).values.backward();
  assert.equal(values(t.grad!), [0, 1, 0]);
});

test('prod over all and along a dim, ints give i64, gradient exact with zeros', () => {
  const x = fl.tensor([
    [1, 2, 3],
    [4, 0.5, -2],
  ]);
  assert.is(x.prod().itemSync(), -24);
  assert.equal(values(x.prod(1)), [6, -4]);
  assert.equal(x.prod(0, true).shape, [1, 3]);
  const i = fl.tensor([2, 3, 4], { dtype: 'i32' }).prod();
  assert.is(i.dtype, 'i64');
  assert.is(Number(i.itemSync()), 24);
  assert.is(fl.prod(fl.zeros([0])).itemSync(), 1);
  assert.is(
    gradcheck(([a]) => a.prod(), [rnd([2, 3])]),
    null,
  );
  assert.is(
    gradcheck(([a]) => a.prod(1, true), [rnd([3, 4])]),
    null,
  );
  for (const vals of [
    [2, 0, 3, 4],
    [0, 2, 0, 3],
    [0, 0, 0, 1],
  ])
    assert.is(
      gradcheck(([a]) => fl.prod(a, 0), [fl.tensor(vals, { dtype: 'f64' })]),
      null,
      JSON.stringify(vals),
    );
  const z = fl.tensor([2, 0, 3], { dtype: 'f64' }).requiresGrad_();
  z.prod().backward();
  assert.equal(values(z.grad!), [0, 6, 0]);
});

test('all and any: bool results over all, a dim or dims; NaN is true; empty all is true', () => {
  const x = fl.tensor([
    [1, 0, 2],
    [3, 4, Number.NaN],
  ]);
  assert.is(fl.all(x).dtype, 'bool');
  assert.equal(values(x.all()), [0]);
  assert.equal(values(x.any()), [1]);
  assert.equal(values(x.all(1)), [0, 1]);
  assert.equal(values(x.any(0, true)), [1, 1, 1]);
  assert.equal(x.any(0, true).shape, [1, 3]);
  assert.equal(values(fl.zeros([2, 0]).all(1)), [1, 1]);
  assert.equal(values(fl.zeros([2, 0]).any(1)), [0, 0]);
  assert.equal(values(fl.tensor([true, false]).any()), [1]);
  assert.is(fl.tensor([1, 2], { dtype: 'u8' }).all().dtype, 'u8');
  expectError(() => x.all(3), RangeError, 'ERR_INDEX', /all/);
});

test.run();
