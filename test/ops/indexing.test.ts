import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib/index';
import { expectError } from '../helpers/reference';
import { values } from '../helpers/values';

const m = () =>
  fl.tensor(
    [
      [1, 2, 3],
      [4, 5, 6],
      [7, 8, 9],
    ],
    { dtype: 'f32' },
  );

test('indexSelect along both dims, i64 and i32 indices', () => {
  assert.equal(values(m().indexSelect(0, fl.tensor([2, 0], { dtype: 'i64' }))), [7, 8, 9, 1, 2, 3]);
  assert.equal(values(m().indexSelect(1, fl.tensor([1, 1], { dtype: 'i32' }))), [2, 2, 5, 5, 8, 8]);
});

test('gather and scatterAdd', () => {
  const idx = fl.tensor(
    [
      [0, 2],
      [1, 0],
    ],
    { dtype: 'i64' },
  );
  assert.equal(values(m().narrow(0, 0, 2).gather(1, idx)), [1, 3, 5, 4]);
  const out = fl.zeros([2, 3]).scatterAdd(
    1,
    fl.tensor(
      [
        [0, 0],
        [2, 1],
      ],
      { dtype: 'long' },
    ),
    fl.tensor(
      [
        [1, 2],
        [3, 4],
      ],
      { dtype: 'f32' },
    ),
  );
  assert.equal(values(out), [3, 0, 0, 0, 4, 3]);
});

test('oneHot of a tensor, of JS arrays and of typed arrays', () => {
  const o = fl.oneHot(fl.tensor([0, 2, 1], { dtype: 'i64' }), 4);
  assert.is(o.dtype, 'i64');
  assert.equal(o.shape, [3, 4]);
  assert.equal(values(o), [1, 0, 0, 0, 0, 0, 1, 0, 0, 1, 0, 0]);
  assert.equal(fl.oneHot(fl.tensor([3], { dtype: 'i64' })).shape, [1, 4]);
  assert.equal(values(fl.oneHot(fl.tensor([[1], [0]], { dtype: 'i32' }), 2)), [0, 1, 1, 0]);
  assert.equal(values(fl.oneHot([2, 0], 3)), [0, 0, 1, 1, 0, 0]);
  assert.equal(fl.oneHot([2, 0]).shape, [2, 3]);
  assert.equal(values(fl.oneHot(new Int32Array([1]), 2)), [0, 1]);
  assert.equal(values(fl.oneHot(new BigInt64Array([1n]), 2)), [0, 1]);
  assert.equal(fl.oneHot([], 3).shape, [0, 3]);
});

test('oneHot of JS class indices outside [0, numClasses) throws ERR_INDEX at once', () => {
  expectError(() => fl.oneHot([5, -1], 3), RangeError, 'ERR_INDEX', /^oneHot: class index 5 is out of range for numClasses 3$/);
  expectError(() => fl.oneHot([0, -1], 3), RangeError, 'ERR_INDEX', /class index -1 .* numClasses 3/);
  expectError(() => fl.oneHot([0.5], 3), TypeError, 'ERR_ARG', /^oneHot: class indices must be integers/);
  expectError(() => fl.oneHot([0], -2), RangeError, 'ERR_RANGE', /^oneHot: numClasses/);
  expectError(() => fl.oneHot(fl.tensor([0.5]), 3), TypeError, 'ERR_DTYPE');
});

test('oneHot of a tensor with a class index outside [0, numClasses) rejects the next sync point', async () => {
  const bad = fl.oneHot(fl.tensor([5, -1], { dtype: 'i64' }), 3);
  let err: unknown;
  await bad.data().catch((e: unknown) => (err = e));
  assert.instance(err, RangeError);
  assert.is((err as { code: string }).code, 'ERR_INDEX');
  assert.is((err as Error).message, 'oneHot: class index 5 is out of range for numClasses 3');
  const neg = fl.oneHot(fl.tensor(new Int32Array([0, -1])), 3);
  expectError(() => neg.dataSync(), RangeError, 'ERR_INDEX', /^oneHot: class index -1 is out of range for numClasses 3$/);
  assert.equal(values(fl.oneHot(fl.tensor([1], { dtype: 'i64' }), 2)), [0, 1]);
});

test('out-of-range indices reject the next sync point', async () => {
  const bad = m().indexSelect(0, fl.tensor([5], { dtype: 'i64' }));
  try {
    await bad.data();
    assert.unreachable('should reject');
  } catch (e) {
    assert.instance(e, RangeError);
    assert.is((e as { code: string }).code, 'ERR_INDEX');
    assert.is((e as Error).message, 'indexSelect: index 5 is out of range for a dimension of size 3');
  }
  // the stream keeps working afterwards
  assert.equal(values(m().sum(1)), [6, 15, 24]);
});

test('index dtype and shape errors', () => {
  expectError(() => m().indexSelect(0, fl.tensor([1.5])), TypeError, 'ERR_DTYPE');
  expectError(() => m().gather(1, fl.tensor([0, 1], { dtype: 'i64' })), RangeError, 'ERR_SHAPE');
});

test.run();
