import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib/index';
import { gradcheck, rnd } from '../helpers/gradcheck';
import { close, expectError } from '../helpers/reference';
import { values } from '../helpers/values';
import { reduceScattered } from './cases/ref';

fl.manualSeed(5);

const I = (v: number[][]) => fl.tensor(v, { dtype: 'i64' });

/** Reference scatter_reduce along dim 1 of 2-D arrays (index may be smaller than src). */
function refScatterReduce(
  x: number[][],
  index: number[][],
  src: number[][],
  reduce: string,
  includeSelf: boolean,
  intMean = false,
): number[] {
  const groups = x.map((row) => row.map((v) => (includeSelf ? [v] : ([] as number[]))));
  const touched = x.map((row) => row.map(() => false));
  index.forEach((row, i) =>
    row.forEach((k, j) => {
      groups[i][k].push(src[i][j]);
      touched[i][k] = true;
    }),
  );
  return x.flatMap((row, i) => row.map((v, j) => (touched[i][j] ? reduceScattered(reduce, groups[i][j], intMean) : v)));
}

test('scatter with a tensor and with a number, src larger than index', () => {
  const x = fl.zeros([2, 4]);
  const index = I([
    [3, 0],
    [1, 2],
  ]);
  const src = fl.tensor([
    [1, 2, 99],
    [3, 4, 99],
    [99, 99, 99],
  ]);
  assert.equal(values(x.scatter(1, index, src)), [2, 0, 0, 1, 0, 3, 4, 0]);
  assert.equal(values(fl.scatter(x, 1, index, 7)), [7, 0, 0, 7, 0, 7, 7, 0]);
  assert.equal(values(fl.scatter(fl.zeros([3, 2], { dtype: 'i32' }), 0, I([[2, 0]]), 5)), [0, 5, 0, 0, 5, 0]);
});

for (const reduce of ['sum', 'prod', 'mean', 'amax', 'amin'] as const)
  for (const includeSelf of [true, false])
    test(`scatterReduce ${reduce} includeSelf=${includeSelf} matches the reference (f64, f32, i64)`, () => {
      const x = [
        [1.5, -2, 3, 0.5],
        [4, 0.25, -1, 2],
      ];
      const index = [
        [0, 2, 0, 0],
        [3, 3, 1, 3],
      ];
      const src = [
        [2, -3, 0.5, 4, 9],
        [-1, 5, 2.5, 0.75, 9],
      ];
      for (const dtype of ['f64', 'f32'] as const) {
        const got = fl.tensor(x, { dtype }).scatterReduce(1, I(index), fl.tensor(src, { dtype }), reduce, { includeSelf });
        close(values(got), refScatterReduce(x, index, src, reduce, includeSelf), 1e-6, 1e-6, `${reduce} ${dtype}`);
      }
      const xi = x.map((r) => r.map((v) => Math.round(v * 4)));
      const si = src.map((r) => r.map((v) => Math.round(v * 4)));
      const got = fl.tensor(xi, { dtype: 'i64' }).scatterReduce(1, I(index), fl.tensor(si, { dtype: 'i64' }), reduce, { includeSelf });
      assert.equal(values(got), refScatterReduce(xi, index, si, reduce, includeSelf, true));
    });

test('scatter and scatterReduce gradients (f64 gradcheck), ties and zeros included', () => {
  const index = I([
    [0, 2, 0],
    [1, 1, 3],
  ]);
  // Plain scatter: no repeated target (with one, only the winning write has a gradient).
  const unique = I([
    [0, 2, 1],
    [3, 1, 0],
  ]);
  assert.is(
    gradcheck(([a, s]) => a.scatter(1, unique, s), [rnd([2, 4]), rnd([2, 3])]),
    null,
  );
  assert.is(
    gradcheck(([a]) => a.scatter(1, index, 2), [rnd([2, 4])]),
    null,
  );
  assert.is(
    gradcheck(([a, s]) => a.scatter(1, unique, s), [rnd([2, 4]), rnd([3, 5])]),
    null,
  );
  for (const reduce of ['sum', 'prod', 'mean', 'amax', 'amin'] as const)
    for (const includeSelf of [true, false]) {
      const msg = gradcheck(([a, s]) => a.scatterReduce(1, index, s, reduce, { includeSelf }), [rnd([2, 4]), rnd([2, 3])]);
      assert.is(msg, null, `${reduce} ${includeSelf}: ${msg}`);
    }
  // prod with a zero in self and one in src.
  const z = fl.tensor(
    [
      [0, 2, 3, 1],
      [1, 1, 2, 3],
    ],
    { dtype: 'f64' },
  );
  const zs = fl.tensor(
    [
      [1.5, 0, 2],
      [0, 2, 3],
    ],
    { dtype: 'f64' },
  );
  assert.is(
    gradcheck(([a, s]) => a.scatterReduce(1, index, s, 'prod'), [z, zs]),
    null,
  );
});

test('indexAdd with alpha, repeated indices, any dim; its gradient', () => {
  const x = fl.ones([3, 2]);
  const out = x.indexAdd(
    0,
    fl.tensor([2, 0, 2], { dtype: 'i64' }),
    fl.tensor([
      [1, 2],
      [3, 4],
      [5, 6],
    ]),
    { alpha: 2 },
  );
  assert.equal(values(out), [7, 9, 1, 1, 13, 17]);
  const y = fl.indexAdd(fl.zeros([2, 3]), 1, fl.tensor([1], { dtype: 'i32' }), fl.ones([2, 1]));
  assert.equal(values(y), [0, 1, 0, 0, 1, 0]);
  const idx = fl.tensor([0, 2, 0], { dtype: 'i64' });
  assert.is(
    gradcheck(([a, s]) => a.indexAdd(1, idx, s, { alpha: -1.5 }), [rnd([2, 4]), rnd([2, 3])]),
    null,
  );
});

test('bad arguments and out-of-range indices name the op', () => {
  const x = fl.zeros([2, 3]);
  expectError(() => x.scatter(1, fl.tensor([[0]]), 1), TypeError, 'ERR_DTYPE', /index/);
  expectError(() => x.scatter(1, I([[0, 1]]), fl.ones([1, 1])), RangeError, 'ERR_SHAPE', /larger than src/);
  expectError(() => x.scatter(0, I([[0, 1, 0, 1]]), fl.ones([1, 4])), RangeError, 'ERR_SHAPE', /larger than input/);
  expectError(() => x.scatterReduce(1, I([[0]]), fl.ones([1, 1]), 'max' as never), TypeError, 'ERR_ARG', /amax/);
  expectError(() => x.scatterReduce(1, I([[0]]), fl.ones([1, 1]), 'sum', { include_self: true } as never), TypeError, 'ERR_ARG');
  expectError(() => x.scatter(1, I([[5]]), 1).dataSync(), RangeError, 'ERR_INDEX', /scatter/);
  expectError(() => x.scatterReduce(1, I([[-1]]), fl.ones([1, 1]), 'amax').dataSync(), RangeError, 'ERR_INDEX', /scatterReduce/);
  expectError(() => x.indexAdd(0, fl.tensor([0], { dtype: 'i64' }), fl.ones([2, 3])), RangeError, 'ERR_SHAPE', /indexAdd/);
  expectError(() => x.indexAdd(0, fl.tensor([3], { dtype: 'i64' }), fl.ones([1, 3])).dataSync(), RangeError, 'ERR_INDEX');
});

test.run();
