/**
 * x.setIndex(...) (PyTorch's `x[...] = v`), x.indexPut_ / indexPut (index_put_, index_put) against
 * torch 1.13 (test/fixtures/make_index_fixtures.py), with autograd through the in-place write,
 * the in-place rules (version counters, leaves, views), f64 gradient checks, errors, and cpu:1.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib/index';
import { close, type FixtureTensor, fixtureFile, load } from '../fixtures/load';
import { gradcheck, rnd } from '../helpers/gradcheck';
import { caught } from '../helpers/errors';
import { values } from '../helpers/values';
import { entry, type FixtureEntry } from './index_fixture_entries';

// Two virtual CPU devices, set before the first op.
fl.setCpuDeviceCount(2);

const fx = fixtureFile('index');
const long = (v: number[]) => fl.tensor(BigInt64Array.from(v, BigInt));
const grid = () => fl.arange(0, 60, { dtype: 'f64' }).reshape([3, 4, 5]);

interface Written {
  output: FixtureTensor;
  gy: FixtureTensor;
  grad: FixtureTensor;
  grad_value?: FixtureTensor;
}

/** Checks the written tensor and the gradients of x and of the value against the fixture. */
function check(c: Written, x: fl.Tensor, y: fl.Tensor, v: fl.Tensor | null): void {
  close(y, c.output, 1e-12, 'output');
  y.mul(load(c.gy)).sum().backward();
  close(x.grad as fl.Tensor, c.grad, 1e-12, 'grad x');
  if (c.grad_value) close((v as fl.Tensor).grad as fl.Tensor, c.grad_value, 1e-12, 'grad value');
}

type PutCase = Written & { indices: FixtureEntry[]; value: FixtureTensor; accumulate: boolean };
for (const [name, c] of Object.entries(fx.puts) as [string, PutCase][]) {
  test(`torch 1.13: index_put_ ${name}${c.accumulate ? ' (accumulate)' : ''}`, () => {
    const x = load(fx.x, 'f64', true);
    const v = load(c.value, 'f64', true);
    const y = x.clone();
    const same = y.indexPut_(c.indices.map(entry) as fl.Tensor[], v, { accumulate: c.accumulate });
    assert.ok(same === y);
    check(c, x, y, v);
  });
  test(`torch 1.13: index_put (out of place) ${name}`, () => {
    const x = load(fx.x, 'f64', true);
    const v = load(c.value, 'f64', true);
    const y = fl.indexPut(x, c.indices.map(entry) as fl.Tensor[], v, { accumulate: c.accumulate });
    check(c, x, y, v);
  });
}

type SetCase = Written & { index: FixtureEntry[]; value?: FixtureTensor; scalar?: number };
for (const [name, c] of Object.entries(fx.sets) as [string, SetCase][]) {
  test(`torch 1.13: x[${name}] = value`, () => {
    const x = load(fx.x, 'f64', true);
    const v = c.value ? load(c.value, 'f64', true) : null;
    const y = x.clone();
    y.setIndex(c.index.map(entry), v ?? (c.scalar as number));
    check(c, x, y, v);
  });
}

test('setIndex: one entry alone, numbers and booleans, casts the value, leading 1s of the value dropped', () => {
  const x = grid();
  x.setIndex(0, 1);
  assert.equal(values(x.index(0, 0)), [1, 1, 1, 1, 1]);
  x.setIndex([null, 1], fl.tensor([[7, 8, 9, 10, 11]], { dtype: 'i64' }));
  assert.equal(values(x.index(2, 1)), [7, 8, 9, 10, 11]);
  x.setIndex([2, 1], fl.tensor([[[-1, -2, -3, -4, -5]]], { dtype: 'f32' }));
  assert.equal(values(x.index(2, 1)), [-1, -2, -3, -4, -5]);
  const b = fl.zeros([2, 3], { dtype: 'bool' });
  b.setIndex([1, [1, null]], true);
  assert.equal(values(b), [0, 0, 0, 0, 1, 1]);
  const i = fl.zeros([4], { dtype: 'i64' });
  i.setIndex([long([1, 3])], 5);
  assert.equal(values(i), [0, 5, 0, 5]);
});

test('setIndex writes into the storage: views of x see it, and the version counter moves', () => {
  const x = grid();
  const row = x.index(1); // a view
  x.setIndex([1, 2], 0);
  assert.equal(values(row.index(2)), [0, 0, 0, 0, 0]);
  // A write through a basic-index view, and one by index tensors, both show in views of x.
  const v0 = x._version.value;
  x.setIndex([null, null, long([0])], -1);
  assert.equal(values(row.index(null, 0)), [-1, -1, -1, -1]);
  assert.ok(x._version.value > v0);
  const w = fl.randn([3, 4], { dtype: 'f64' }).requiresGrad_();
  const h = w.mul(2);
  const y = h.mul(h);
  fl.noGrad(() => h.setIndex(0, 0));
  assert.throws(() => y.sum().backward(), /modified in place by setIndex/);
});

test('autograd: a leaf that requires grad refuses; noGrad allows; a view refuses while recorded; a plain leaf takes a value that requires grad', () => {
  const leaf = fl.randn([3, 4], { dtype: 'f64' }).requiresGrad_();
  let e = caught(() => leaf.setIndex(0, 1));
  assert.is(e.code, 'ERR_AUTOGRAD');
  assert.match(e.message, /setIndex: a leaf tensor that requires grad/);
  assert.is(caught(() => leaf.indexPut_([long([0])], 1)).code, 'ERR_AUTOGRAD');
  fl.noGrad(() => leaf.setIndex(0, 1));
  assert.equal(values(leaf.index(0)), [1, 1, 1, 1]);
  const h = leaf.mul(1);
  e = caught(() => h.index(0).setIndex(0, 5));
  assert.is(e.code, 'ERR_AUTOGRAD');
  assert.match(e.message, /view/);
  const plain = fl.zeros([2, 3], { dtype: 'f64' });
  const v = fl.tensor([1, 2, 3], { dtype: 'f64' }).requiresGrad_();
  plain.setIndex(1, v);
  assert.ok(plain.requiresGrad && !plain.isLeaf);
  plain
    .mul(fl.tensor([[1], [10]], { dtype: 'f64' }))
    .sum()
    .backward();
  assert.equal(values(v.grad as fl.Tensor), [10, 10, 10]);
});

test('accumulate sums repeated positions; without it a repeated position holds one of the values', () => {
  const x = fl.zeros([4]);
  x.indexPut_([long([1, 1, 3, 1])], fl.tensor([1, 2, 3, 4]), { accumulate: true });
  assert.equal(values(x), [0, 7, 0, 3]);
  const y = fl.zeros([4]);
  y.indexPut_([long([2, 2])], fl.tensor([5, 6]));
  assert.ok([5, 6].includes(values(y)[2]));
  // A mask with a scalar value and a null for a whole dim.
  const z = fl.zeros([2, 3]);
  z.indexPut_([null, fl.tensor([true, false, true])], 4, { accumulate: true });
  assert.equal(values(z), [4, 0, 4, 4, 0, 4]);
});

test('f64 gradient checks through the in-place writes', () => {
  const idx = long([2, 0, 2]);
  const cases: [string, (x: fl.Tensor, v: fl.Tensor) => fl.Tensor][] = [
    ['setIndex basic', (x, v) => x.mul(1).setIndex([null, 1, [1, 4]], v)],
    ['setIndex strided', (x, v) => x.mul(1).setIndex(['...', 1, [null, null, 2]], v)],
    ['setIndex tensors', (x, v) => x.mul(1).setIndex([idx, 1, long([1, 2, 3])], v)],
    ['indexPut_ accumulate', (x, v) => x.mul(1).indexPut_([idx, long([1, 2, 1])], v.reshape([3, 1]), { accumulate: true })],
  ];
  for (const [what, f] of cases) {
    const problem = gradcheck(([x, v]) => f(x, v).mul(x), [rnd([3, 4, 5]), rnd([3])]);
    assert.is(problem, null, `${what}: ${problem}`);
  }
});

test('errors: value shapes, dtypes, indices, options, out-of-range integers', () => {
  const x = grid();
  let e = caught(() => x.setIndex([null, long([0, 1])], fl.ones([3], { dtype: 'f64' })));
  assert.is(e.code, 'ERR_SHAPE');
  assert.match(e.message, /value tensor of shape \[3\] cannot be broadcast to indexing result of shape \[3,2,5\]/);
  e = caught(() => x.indexPut_([long([0, 1])], fl.ones([3])));
  assert.is(e.code, 'ERR_DTYPE');
  assert.match(e.message, /f64 for the destination and f32 for the source/);
  assert.is(caught(() => x.indexPut_([0 as unknown as fl.Tensor], 1)).code, 'ERR_ARG');
  assert.is(caught(() => x.indexPut_(long([0]) as unknown as fl.Tensor[], 1)).code, 'ERR_ARG');
  e = caught(() => x.indexPut_([long([0])], 1, { accumulte: true } as fl.IndexPutOptions));
  assert.is(e.code, 'ERR_ARG');
  assert.match(e.message, /accumulate/);
  e = caught(() => x.setIndex([1, 9], 0));
  assert.is(e.code, 'ERR_INDEX');
  assert.match(e.message, /index 9 is out of bounds for dimension 1 with size 4/);
  assert.is(caught(() => x.setIndex([[0, 2, 0]], 0)).code, 'ERR_ARG');
  assert.is(caught(() => x.setIndex(0, 'a' as unknown as number)).code, 'ERR_ARG');
  assert.is(caught(() => fl.zeros([2], { dtype: 'i32' }).setIndex(0, 2 ** 40)).code, 'ERR_RANGE');
  // Nothing was written by the refused calls.
  assert.equal(values(x.sum()), [(59 * 60) / 2]);
  // An index tensor out of range fails at the next sync point.
  assert.is(
    caught(() =>
      x
        .clone()
        .setIndex([long([3])], 0)
        .dataSync(),
    ).code,
    'ERR_INDEX',
  );
  assert.equal(values(x.index(0, 0, 1)), [1]);
});

test('on cpu:1: read and write, with index tensors and values made on cpu', () => {
  const x = grid().to('cpu:1');
  const y = x.index(long([2, 0]), null, [1, 3]);
  assert.is(y.device, 'cpu:1');
  assert.equal(values(y), [41, 42, 46, 47, 51, 52, 56, 57, 1, 2, 6, 7, 11, 12, 16, 17]);
  x.setIndex([long([0]), 0], fl.tensor([9, 9, 9, 9, 9], { dtype: 'f64' }));
  x.indexPut_([long([1, 1]), long([0, 0])], fl.tensor(1, { dtype: 'f64' }).to('cpu:1'), { accumulate: true });
  assert.equal(values(x.index(0, 0)), [9, 9, 9, 9, 9]);
  assert.equal(values(x.index(1, 0)), [22, 23, 24, 25, 26]);
  const g = fl.randn([2, 3], { dtype: 'f64', device: 'cpu:1' }).requiresGrad_();
  g.index(fl.tensor([true, false]))
    .sum()
    .backward();
  assert.equal(values(g.grad as fl.Tensor), [1, 1, 1, 0, 0, 0]);
});

test.run();
