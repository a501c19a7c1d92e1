import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib/index';
import { gradcheck, rnd } from '../helpers/gradcheck';
import { linesAlong } from '../helpers/lines';
import { expectError } from '../helpers/reference';
import { values } from '../helpers/values';

fl.manualSeed(11);

/** torch.sort's order: NaN above everything, stable (ties by index). */
function refOrder(line: number[], descending: boolean): number[] {
  const key = (v: number) => (Number.isNaN(v) ? Infinity : v);
  const idx = line.map((_, i) => i);
  return idx.sort((a, b) => {
    const x = line[a],
      y = line[b];
    const nx = Number.isNaN(x),
      ny = Number.isNaN(y);
    let c = nx && ny ? 0 : nx ? 1 : ny ? -1 : key(x) - key(y);
    if (descending) c = -c;
    return c !== 0 ? c : a - b;
  });
}

function checkSort(x: fl.Tensor, dim: number, descending: boolean): void {
  const { values: sorted, indices } = x.sort(dim, descending);
  assert.is(indices.dtype, 'i64');
  assert.equal(sorted.shape, x.shape);
  const v = values(x),
    gv = values(sorted),
    gi = values(indices);
  for (const offs of linesAlong([...x.shape], dim)) {
    const order = refOrder(
      offs.map((o) => v[o]),
      descending,
    );
    offs.forEach((o, k) => {
      assert.is(gi[o], order[k], `index at ${o}`);
      const want = v[offs[order[k]]];
      assert.ok(Object.is(gv[o], want) || (want === 0 && gv[o] === 0), `value at ${o}: ${gv[o]} vs ${want}`);
    });
  }
}

for (const [shape, dim] of [
  [[9], 0],
  [[4, 6], 1],
  [[4, 6], 0],
  [[2, 3, 5], 1],
  [[3, 1500], -1],
  [[0, 4], 1],
  [[], 0],
] as [number[], number][]) {
  test(`sort along ${dim} of ${JSON.stringify(shape)}, both directions, stable with ties`, () => {
    // Few distinct values so ties are common.
    const x = fl.randint(0, 5, shape).to('f32');
    checkSort(x, dim, false);
    checkSort(x, dim, true);
    checkSort(fl.randn(shape, { dtype: 'f64' }), dim, true);
  });
}

test('NaN sorts last ascending and first descending; -0 equals 0; ints, bool, half', () => {
  const x = fl.tensor([3, Number.NaN, -1, 0, -0, Number.NEGATIVE_INFINITY, Number.NaN, 2]);
  checkSort(x, 0, false);
  checkSort(x, 0, true);
  assert.equal(values(x.argsort()), [5, 2, 3, 4, 7, 0, 1, 6]);
  for (const dtype of ['i32', 'i64', 'u8', 'bf16', 'f16'] as const) checkSort(fl.randint(0, 7, [3, 10]).to(dtype), 1, true);
  assert.equal(values(fl.tensor([true, false, true, false]).argsort(0, true)), [0, 2, 1, 3]);
});

test('topk: largest and smallest, along any dim, k = 0 and k = n', () => {
  const x = fl.tensor([
    [1, 5, 3, 5],
    [7, 2, 2, 9],
  ]);
  const t = x.topk(2);
  assert.equal(values(t.values), [5, 5, 9, 7]);
  assert.equal(values(t.indices), [1, 3, 3, 0]);
  const s = fl.topk(x, 1, 0, false);
  assert.equal(s.values.shape, [1, 4]);
  assert.equal(values(s.values), [1, 2, 2, 5]);
  assert.equal(values(s.indices), [0, 1, 1, 0]);
  assert.equal(x.topk(0).values.shape, [2, 0]);
  assert.equal(values(x.topk(4, 1).indices), [1, 3, 2, 0, 3, 0, 1, 2]);
});

test('sort and topk gradients (f64 gradcheck); argsort has none', () => {
  assert.is(
    gradcheck(([a]) => a.sort(1).values, [rnd([3, 5])]),
    null,
  );
  assert.is(
    gradcheck(([a]) => a.sort(0, true).values, [rnd([4, 3])]),
    null,
  );
  assert.is(
    gradcheck(([a]) => a.topk(2, 1).values, [rnd([3, 5])]),
    null,
  );
  assert.is(
    gradcheck(([a]) => a.topk(3, 0, false).values, [rnd([4, 2, 3])]),
    null,
  );
  const a = rnd([4]).requiresGrad_();
  assert.is(a.argsort().requiresGrad, false);
});

test('errors name the op and the bad value', () => {
  expectError(() => fl.ones([2, 3]).sort(2), RangeError, 'ERR_INDEX', /sort/);
  expectError(() => fl.ones([2, 3]).topk(4), RangeError, 'ERR_RANGE', /k \(4\)/);
  expectError(() => fl.ones([2, 3]).topk(1.5), TypeError, 'ERR_ARG');
  expectError(() => fl.sort(fl.ones([2]), 0, 'yes' as never), TypeError, 'ERR_ARG', /descending/);
});

test.run();
