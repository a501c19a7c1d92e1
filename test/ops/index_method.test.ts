/**
 * x.index(...): PyTorch's `x[...]` against torch 1.13 (test/fixtures/make_index_fixtures.py): outputs
 * and gradients of basic and advanced indexing, view semantics, f64 gradient checks and errors.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib/index';
import { close, fixtureFile, load } from '../fixtures/load';
import { gradcheck, rnd } from '../helpers/gradcheck';
import { caught } from '../helpers/errors';
import { values } from '../helpers/values';
import { entry, type FixtureEntry } from './index_fixture_entries';

const fx = fixtureFile('index');
const long = (v: number[]) => fl.tensor(BigInt64Array.from(v, BigInt));
const grid = () => fl.arange(0, 60, { dtype: 'f64' }).reshape([3, 4, 5]);

for (const [name, c] of Object.entries(fx.reads) as [string, { index: FixtureEntry[]; output: never; gy: never; grad: never }][]) {
  test(`torch 1.13: x[${name}] and its gradient`, () => {
    const x = load(fx.x, 'f64', true);
    const y = x.index(...c.index.map(entry));
    close(y, c.output, 1e-12, 'output');
    y.mul(load(c.gy)).sum().backward();
    close(x.grad as fl.Tensor, c.grad, 1e-12, 'grad');
  });
}

test('fl.index and the method agree; i32 indices; index tensors on another dtype path', () => {
  const x = grid();
  assert.equal(values(fl.index(x, 2, -1)), values(x.index(2, -1)));
  const i32 = fl.tensor([2, 0], { dtype: 'i32' });
  assert.equal(values(x.index(null, i32, 0)), [10, 0, 30, 20, 50, 40]);
  assert.equal(fl.ellipsis, '...');
  assert.equal(fl.newaxis, 'newaxis');
  assert.equal([...x.index('...', 'newaxis', 1).shape], [3, 4, 1]);
});

test('basic indexing returns a view where the storage allows: writes show in the base', () => {
  const x = grid();
  const row = x.index(1);
  row.fill_(-1);
  assert.equal(values(x.index(1, 0)), [-1, -1, -1, -1, -1]);
  const rows = x.index([0, 2]);
  rows.mul_(0);
  assert.equal(values(x.index(0, 0)), [0, 0, 0, 0, 0]);
  assert.equal(values(x.index(2, 0)), [40, 41, 42, 43, 44]);
  // An integer then a slice of the next dim, and an ellipsis with nothing after it, are views too.
  const part = x.index(2, [1, 3]);
  part.add_(1000);
  assert.equal(values(x.index(2, 1, [0, 2])), [1045, 1046]);
  const all = x.index('...');
  all.zero_();
  assert.equal(values(x.sum()), [0]);
  // x[()] is a new tensor viewing x, as PyTorch's.
  const same = x.index();
  assert.ok(same !== x);
  same.fill_(3);
  assert.equal(values(x.index(0, 0, 0)), [3]);
});

test('a view shares the version counter: a node that saved the base refuses backward after a write through it', () => {
  const w = fl.randn([3, 4], { dtype: 'f64' }).requiresGrad_();
  const h = w.mul(2);
  const y = h.mul(h); // mul saves its inputs
  fl.noGrad(() => h.index(0).fill_(0));
  assert.throws(() => y.sum().backward(), /modified in place/);
});

test('a strided slice, a column, index tensors and masks are copies', () => {
  const x = grid();
  for (const cut of [x.index([null, null, 2]), x.index(null, 1), x.index(long([0])), x.index(x.gt(30))]) cut.fill_(-7);
  assert.equal(values(x.sum()), [(59 * 60) / 2]);
});

test('an empty selection and a dim of size 0', () => {
  const x = grid();
  assert.equal([...x.index([4, 2]).shape], [0, 4, 5]);
  assert.equal([...x.index(long([])).shape], [0, 4, 5]);
  assert.equal([...x.index(null, x.index(0).gt(1000)).shape], [3, 0]);
  const e = fl.zeros([0, 3]);
  assert.equal([...e.index(null, 1).shape], [0]);
  assert.equal([...e.index(long([]), long([])).shape], [0]);
});

test("a k-d mask followed by a slice cuts the dim after the mask (NumPy; PyTorch 1.13 cuts the mask's second dim)", () => {
  const x = grid();
  const mask = fl.tensor([
    [true, false, false, false],
    [false, false, false, true],
    [false, false, false, false],
  ]);
  const y = x.index(mask, [1, 3]);
  assert.equal([...y.shape], [2, 2]);
  assert.equal(values(y), [1, 2, 36, 37]);
});

test('f64 gradient checks: basic, strided, separated index tensors with repeats, a mask', () => {
  const idx = long([2, 0, 2]);
  const mask = fl.tensor([true, false, true, true]);
  const cases: [string, (t: fl.Tensor) => fl.Tensor][] = [
    ['int, slice, newaxis', (t) => t.index(1, [1, null], 'newaxis')],
    ['step 2, negative bounds', (t) => t.index('...', [-4, null, 2])],
    ['separated index tensors with repeats', (t) => t.index(idx, null, fl.tensor([[1], [1]], { dtype: 'i64' }))],
    ['mask on dim 1, tensor on dim 0', (t) => t.index(idx, mask)],
    ['0-d index tensor', (t) => t.index(fl.tensor(BigInt64Array.from([1n]), { shape: [] }), null, idx)],
  ];
  for (const [what, f] of cases) {
    const problem = gradcheck(([t]) => f(t), [rnd([3, 4, 5])]);
    assert.is(problem, null, `${what}: ${problem}`);
  }
});

test('errors: out-of-range integers name the dim and size; malformed entries; shape mismatches', () => {
  const x = grid();
  let e = caught(() => x.index(null, 4));
  assert.is(e.code, 'ERR_INDEX');
  assert.match(e.message, /index 4 is out of bounds for dimension 1 with size 4/);
  e = caught(() => x.index('...', -6));
  assert.is(e.code, 'ERR_INDEX');
  assert.match(e.message, /index -6 is out of bounds for dimension 2 with size 5/);
  assert.is(caught(() => x.index(0, 0, 0, 0)).code, 'ERR_INDEX');
  assert.match(caught(() => x.index(0, 0, 0, 0)).message, /too many indices for tensor of dimension 3/);
  for (const bad of [1.5, [1], [0, 1, 2, 3], [0, 2, 0], [0, 2, -1], [0.5, 2], 'x', undefined, {}, '...,'] as unknown[]) {
    const err = caught(() => x.index(bad as fl.IndexEntry));
    assert.is(err.code, 'ERR_ARG', `${JSON.stringify(bad)}: ${err.message}`);
  }
  assert.match(caught(() => x.index([1, 2, 0])).message, /step must be greater than zero/);
  assert.match(caught(() => x.index('...', 0, '...')).message, /single ellipsis/);
  assert.is(caught(() => x.index(fl.tensor([1.5]))).code, 'ERR_DTYPE');
  e = caught(() => x.index(long([0, 1]), long([0, 1, 2])));
  assert.is(e.code, 'ERR_SHAPE');
  assert.match(e.message, /could not be broadcast together with shapes \[2\], \[3\]/);
  e = caught(() => x.index(fl.tensor([true, false, true, true])));
  assert.is(e.code, 'ERR_SHAPE');
  assert.match(e.message, /mask \[4\] at index 0 does not match the shape of the indexed tensor \[3,4,5\]/);
  // Index tensors are checked when the gather runs: ERR_INDEX at the next sync point, naming the value.
  e = caught(() => x.index(long([0, 3])).dataSync());
  assert.is(e.code, 'ERR_INDEX');
  assert.match(e.message, /index 3 is out of range for a dimension of size 3/);
  e = caught(() => x.index(long([1]), long([-5])).dataSync());
  assert.is(e.code, 'ERR_INDEX');
  assert.match(e.message, /index -5 is out of range for a dimension of size 4/);
  // A part out of range must not alias another valid position of the merged dims.
  assert.is(caught(() => x.index(long([0]), long([4])).dataSync()).code, 'ERR_INDEX');
  // Nothing is left broken: the next op runs.
  assert.equal(values(x.index(0, 0, 1)), [1]);
});

test.run();
