import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib/index';
import { gradcheck, rnd } from '../helpers/gradcheck';
import { expectError } from '../helpers/reference';
import { values } from '../helpers/values';

fl.manualSeed(3);

test('maskedSelect picks in row-major order, broadcasting mask and input', () => {
  const x = fl.tensor([
    [1, 2, 3],
    [4, 5, 6],
  ]);
  const m = fl.tensor([
    [true, false, true],
    [false, false, true],
  ]);
  assert.equal(values(x.maskedSelect(m)), [1, 3, 6]);
  assert.equal(values(fl.maskedSelect(x, fl.tensor([false, true, true]))), [2, 3, 5, 6]);
  const row = fl.maskedSelect(fl.tensor([10, 20]), fl.tensor([[true], [false], [true]]));
  assert.equal(values(row), [10, 20, 10, 20]);
  assert.equal(fl.maskedSelect(x, fl.zeros([2, 3], { dtype: 'bool' })).shape, [0]);
  assert.equal(fl.maskedSelect(fl.zeros([0, 3]), fl.ones([3], { dtype: 'bool' })).shape, [0]);
});

test('maskedSelect agrees with an f64 reference on a large random mask', () => {
  const x = fl.randn([37, 129], { dtype: 'f64' });
  const m = fl.rand([37, 129]).gt(0.5);
  const xv = values(x),
    mv = values(m);
  assert.equal(
    values(x.maskedSelect(m)),
    xv.filter((_, i) => mv[i]),
  );
});

test('maskedSelect gradient (f64 gradcheck), broadcast input', () => {
  const m = fl.tensor([
    [true, false, true],
    [false, true, true],
  ]);
  assert.is(
    gradcheck(([a]) => a.maskedSelect(m), [rnd([2, 3])]),
    null,
  );
  assert.is(
    gradcheck(([a]) => a.maskedSelect(m), [rnd([3])]),
    null,
  );
});

test('nonzero: [n, ndim] i64 coordinates, asTuple, NaN counts, 0-d and empty', () => {
  const x = fl.tensor([
    [0, 1.5, 0],
    [Number.NaN, 0, -2],
  ]);
  const nz = x.nonzero();
  assert.is(nz.dtype, 'i64');
  assert.equal(nz.shape, [3, 2]);
  assert.equal(values(nz), [0, 1, 1, 0, 1, 2]);
  const [r, c] = fl.nonzero(x, { asTuple: true });
  assert.equal(values(r), [0, 1, 1]);
  assert.equal(values(c), [1, 0, 2]);
  assert.equal(fl.nonzero(fl.tensor(3)).shape, [1, 0]);
  assert.equal(fl.nonzero(fl.tensor(0)).shape, [0, 0]);
  assert.equal(values(fl.nonzero(fl.tensor(5), { asTuple: true })[0]), [0]);
  assert.equal(fl.nonzero(fl.zeros([0, 4])).shape, [0, 2]);
  assert.equal(values(fl.tensor([true, false, true]).nonzero()), [0, 2]);
  const big = fl.rand([5, 7, 11]).gt(0.7);
  const coords = values(big.nonzero());
  const flat = values(big);
  const want: number[] = [];
  flat.forEach((v, i) => {
    if (v) want.push(Math.floor(i / 77), Math.floor(i / 11) % 7, i % 11);
  });
  assert.equal(coords, want);
});

test('errors name the op', () => {
  expectError(() => fl.ones([2]).maskedSelect(fl.ones([2])), TypeError, 'ERR_DTYPE', /maskedSelect: mask must be a bool/);
  expectError(() => fl.ones([2]).maskedSelect(fl.ones([3], { dtype: 'bool' })), RangeError, 'ERR_SHAPE', /broadcast/);
  expectError(() => fl.ones([2]).nonzero({ asTuple: 1 } as never), TypeError, 'ERR_ARG', /asTuple/);
});

test.run();
