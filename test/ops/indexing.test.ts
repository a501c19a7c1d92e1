import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib/index';
import { arr, expectError } from '../helpers/reference';

const m = () => fl.tensor([[1, 2, 3], [4, 5, 6], [7, 8, 9]], { dtype: 'f32' });

test('indexSelect along both dims, i64 and i32 indices', () => {
  assert.equal(arr(m().indexSelect(0, fl.tensor([2, 0]))), [7, 8, 9, 1, 2, 3]);
  assert.equal(arr(m().indexSelect(1, fl.tensor([1, 1], { dtype: 'i32' }))), [2, 2, 5, 5, 8, 8]);
});

test('gather and scatterAdd', () => {
  const idx = fl.tensor([[0, 2], [1, 0]]);
  assert.equal(arr(m().narrow(0, 0, 2).gather(1, idx)), [1, 3, 5, 4]);
  const out = fl.zeros([2, 3]).scatterAdd(1, fl.tensor([[0, 0], [2, 1]]), fl.tensor([[1, 2], [3, 4]], { dtype: 'f32' }));
  assert.equal(arr(out), [3, 0, 0, 0, 4, 3]);
});

test('oneHot', () => {
  const o = fl.oneHot(fl.tensor([0, 2, 1]), 4);
  assert.equal(o.shape, [3, 4]);
  assert.equal(arr(o), [1, 0, 0, 0, 0, 0, 1, 0, 0, 1, 0, 0]);
  assert.equal(fl.oneHot(fl.tensor([3])).shape, [1, 4]);
});

test('out-of-range indices reject the next sync point', async () => {
  const bad = m().indexSelect(0, fl.tensor([5]));
  try {
    await bad.data();
    assert.unreachable('should reject');
  } catch (e) {
    assert.instance(e, RangeError);
    assert.is((e as { code: string }).code, 'ERR_INDEX');
    assert.match((e as Error).message, /indexSelect.*index 5/);
  }
  // the stream keeps working afterwards
  assert.equal(arr(m().sum(1)), [6, 15, 24]);
});

test('index dtype and shape errors', () => {
  expectError(() => m().indexSelect(0, fl.tensor([1.5])), TypeError, 'ERR_DTYPE');
  expectError(() => m().gather(1, fl.tensor([0, 1])), RangeError, 'ERR_SHAPE');
});

test.run();
