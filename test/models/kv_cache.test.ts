/** KVCache: writes land after the filled prefix and read back as [batch, kvHeads, length, headDim]. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib';
import { caught } from '../helpers/errors';

const shape = { layers: 2, batch: 2, kvHeads: 3, headDim: 4, maxLength: 6, dtype: 'f32' as const, device: 'cpu' };

test('update appends per layer; advance moves every layer on', () => {
  const c = new fl.models.KVCache(shape);
  const k1 = fl.randn([2, 3, 4, 4]);
  const v1 = fl.randn([2, 3, 4, 4]);
  const [k, v] = c.update(0, k1, v1);
  assert.equal(k.shape, [2, 3, 4, 4]);
  assert.equal(k.tolistSync(), k1.tolistSync());
  assert.equal(v.tolistSync(), v1.tolistSync());
  c.update(1, k1, v1);
  c.advance(4);
  assert.is(c.length, 4);
  const k2 = fl.randn([2, 3, 1, 4]);
  const [kk] = c.update(0, k2, k2);
  assert.equal(kk.shape, [2, 3, 5, 4]);
  assert.equal(kk.narrow(2, 0, 4).tolistSync(), k1.tolistSync());
  assert.equal(kk.narrow(2, 4, 1).tolistSync(), k2.tolistSync());
  c.dispose();
});

test('overflow, wrong shapes and bad arguments are refused', () => {
  const c = new fl.models.KVCache(shape);
  assert.is(caught(() => c.update(0, fl.zeros([2, 3, 7, 4]), fl.zeros([2, 3, 7, 4]))).code, 'ERR_RANGE');
  assert.is(caught(() => c.update(0, fl.zeros([2, 2, 1, 4]), fl.zeros([2, 2, 1, 4]))).code, 'ERR_SHAPE');
  assert.is(caught(() => c.update(5, fl.zeros([2, 3, 1, 4]), fl.zeros([2, 3, 1, 4]))).code, 'ERR_INDEX');
  assert.is(caught(() => c.advance(7)).code, 'ERR_RANGE');
  assert.is(caught(() => new fl.models.KVCache({ ...shape, batch: 0 })).code, 'ERR_RANGE');
  assert.is(caught(() => new fl.models.KVCache(null as never)).code, 'ERR_ARG');
  c.dispose();
});

test.run();
