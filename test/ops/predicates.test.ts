import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib/index';
import { expectError } from '../helpers/reference';
import { values } from '../helpers/values';

const special = [1, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 0, -2.5];

test('isnan/isinf/isfinite on every float dtype give bool', () => {
  for (const dtype of ['f32', 'f64', 'bf16', 'f16'] as fl.DType[]) {
    const x = fl.tensor(special, { dtype });
    const n = x.isnan(),
      i = fl.isinf(x),
      f = fl.isfinite(x);
    assert.is(n.dtype, 'bool');
    assert.equal(values(n), [0, 1, 0, 0, 0, 0], `isnan ${dtype}`);
    assert.equal(values(i), [0, 0, 1, 1, 0, 0], `isinf ${dtype}`);
    assert.equal(values(f), [1, 0, 0, 0, 1, 1], `isfinite ${dtype}`);
  }
});

test('integer and bool inputs: never NaN or infinite, always finite; empty tensors', () => {
  for (const dtype of ['i32', 'i64', 'u8', 'bool'] as fl.DType[]) {
    const x = fl.ones([2, 2], { dtype });
    assert.equal(values(x.isnan()), [0, 0, 0, 0]);
    assert.equal(values(x.isinf()), [0, 0, 0, 0]);
    assert.equal(values(x.isfinite()), [1, 1, 1, 1]);
    assert.is(x.isfinite().dtype, 'bool');
  }
  assert.equal(fl.zeros([0, 3]).isnan().shape, [0, 3]);
  expectError(() => fl.isnan(3 as never), TypeError, 'ERR_ARG');
});

test('isclose follows torch: tolerances, infinities, equalNan, broadcasting', () => {
  const a = fl.tensor([1, 1, Number.POSITIVE_INFINITY, Number.NaN, 1e-9, 100], { dtype: 'f64' });
  const b = fl.tensor([1 + 1e-6, 1.1, Number.POSITIVE_INFINITY, Number.NaN, 0, 100.001], { dtype: 'f64' });
  // |a-b| <= atol + rtol*|b| with rtol 1e-5, atol 1e-8
  assert.equal(values(fl.isclose(a, b)), [1, 0, 1, 0, 1, 1]);
  assert.equal(values(a.isclose(b, { equalNan: true })), [1, 0, 1, 1, 1, 1]);
  assert.equal(values(fl.isclose(a, b, { rtol: 0, atol: 0 })), [0, 0, 1, 0, 0, 0]);
  assert.equal(values(fl.isclose(a, b, { rtol: 0.2 })), [1, 1, 1, 0, 1, 1]);
  assert.equal(fl.isclose(fl.zeros([2, 1]), fl.zeros([3])).shape, [2, 3]);
  assert.equal(values(fl.isclose(fl.tensor([1, 5], { dtype: 'i64' }), fl.tensor([1, 6], { dtype: 'i64' }), { atol: 1 })), [1, 1]);
  expectError(() => fl.isclose(fl.zeros([2]), fl.zeros([2], { dtype: 'f64' })), TypeError, 'ERR_DTYPE', /f32 and f64/);
  expectError(() => fl.isclose(a, b, { rtol: -1 }), RangeError, 'ERR_RANGE');
  expectError(() => fl.isclose(a, b, { tol: 1 } as never), TypeError, 'ERR_ARG', /unknown option/);
});

test('allclose answers with a boolean', () => {
  const a = fl.tensor([1, 2, 3]);
  assert.is(fl.allclose(a, a.add(1e-7)), true);
  assert.is(a.allclose(a.add(1e-3)), false);
  assert.is(fl.allclose(a, fl.tensor([1, 2, 3.0001]), { atol: 1e-3 }), true);
  assert.is(fl.allclose(fl.tensor([Number.NaN]), fl.tensor([Number.NaN])), false);
  assert.is(fl.allclose(fl.tensor([Number.NaN]), fl.tensor([Number.NaN]), { equalNan: true }), true);
  assert.is(fl.allclose(fl.zeros([0]), fl.zeros([0])), true);
});

test.run();
