import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib/index';
import { close, expectError, refMatmul } from '../helpers/reference';
import { values } from '../helpers/values';
import { gradcheck, rnd } from '../helpers/gradcheck';

test('addmm: beta * input + alpha * mat1 @ mat2, input broadcast', () => {
  const a = rnd([3, 4]),
    b = rnd([4, 2]),
    c = rnd([2]);
  const mm = refMatmul(values(a), values(b), 3, 2, 4);
  const want = mm.map((v, i) => 0.5 * values(c)[i % 2] + 2 * v);
  close(values(fl.addmm(c, a, b, { beta: 0.5, alpha: 2 })), want, 1e-12);
  close(
    values(c.addmm(a, b)),
    mm.map((v, i) => values(c)[i % 2] + v),
    1e-12,
  );
  // beta = 0 ignores input, NaN included.
  close(values(fl.addmm(fl.full([3, 2], Number.NaN, { dtype: 'f64' }), a, b, { beta: 0 })), mm, 1e-12);
  expectError(() => fl.addmm(c, a, a), RangeError, 'ERR_SHAPE', /\[3,4\] and \[3,4\]/);
  expectError(() => fl.addmm(rnd([3]), a, b), RangeError, 'ERR_SHAPE', /does not broadcast/);
  expectError(() => fl.addmm(fl.zeros([2]), a, b), TypeError, 'ERR_DTYPE');
  expectError(() => fl.addmm(c, a, b, { gamma: 1 } as never), TypeError, 'ERR_ARG');
  assert.is(
    gradcheck(([i, x, y]) => fl.addmm(i, x, y, { beta: 0.7, alpha: -1.3 }), [rnd([3, 1]), rnd([3, 4]), rnd([4, 2])]),
    null,
  );
});

test('baddbmm over batches, and its gradient', () => {
  const a = rnd([2, 3, 4]),
    b = rnd([2, 4, 5]),
    c = rnd([3, 5]);
  const out = values(fl.baddbmm(c, a, b, { beta: 2, alpha: 0.5 }));
  for (let k = 0; k < 2; k++) {
    const mm = refMatmul(values(a).slice(k * 12, k * 12 + 12), values(b).slice(k * 20, k * 20 + 20), 3, 5, 4);
    close(
      out.slice(k * 15, k * 15 + 15),
      mm.map((v, i) => 2 * values(c)[i] + 0.5 * v),
      1e-12,
    );
  }
  expectError(() => fl.baddbmm(c, rnd([3, 4]), b), RangeError, 'ERR_SHAPE', /3-D/);
  expectError(() => fl.baddbmm(c, rnd([3, 3, 4]), b), RangeError, 'ERR_SHAPE');
  assert.is(
    gradcheck(([i, x, y]) => fl.baddbmm(i, x, y, { beta: -0.5, alpha: 1.5 }), [rnd([2, 1, 3]), rnd([2, 2, 3]), rnd([2, 3, 3])]),
    null,
  );
});

test('lerp with scalar and tensor weights, and its gradient', () => {
  const s = rnd([2, 3]),
    e = rnd([2, 3]),
    w = rnd([3]);
  const sv = values(s),
    ev = values(e),
    wv = values(w);
  close(
    values(fl.lerp(s, e, 0.3)),
    sv.map((v, i) => v + 0.3 * (ev[i] - v)),
    1e-12,
  );
  close(
    values(s.lerp(e, w)),
    sv.map((v, i) => v + wv[i % 3] * (ev[i] - v)),
    1e-12,
  );
  expectError(() => fl.lerp(fl.zeros([2], { dtype: 'i64' }), fl.zeros([2], { dtype: 'i64' }), 0.5), TypeError, 'ERR_DTYPE');
  expectError(() => fl.lerp(s, e, fl.zeros([3])), TypeError, 'ERR_DTYPE');
  assert.is(
    gradcheck(([a, b, c]) => fl.lerp(a, b, c), [rnd([2, 3]), rnd([1, 3]), rnd([2, 1])]),
    null,
  );
  assert.is(
    gradcheck(([a, b]) => fl.lerp(a, b, 0.8), [rnd([4]), rnd([4])]),
    null,
  );
});

test('clamp with tensor bounds: broadcast values and PyTorch gradients', () => {
  const x = fl.tensor([-2, 0.5, 3, 1], { dtype: 'f64' });
  const lo = fl.tensor([0, 0, 0, 2], { dtype: 'f64' }),
    hi = fl.tensor([1, 1, 1, 1.5], { dtype: 'f64' });
  assert.equal(values(x.clamp(lo, hi)), [0, 0.5, 1, 1.5]); // min > max: max wins
  assert.equal(values(fl.clamp(x, lo)), [0, 0.5, 3, 2]);
  assert.equal(values(fl.clamp(x, null, hi)), [-2, 0.5, 1, 1]);
  assert.equal(fl.clamp(fl.zeros([2, 1], { dtype: 'f64' }), fl.zeros([3], { dtype: 'f64' })).shape, [2, 3]);
  const xs = x.clone().requiresGrad_(),
    ls = lo.clone().requiresGrad_(),
    hs = hi.clone().requiresGrad_();
  fl.clamp(xs, ls, hs).sum().backward();
  assert.equal(values(xs.grad!), [0, 1, 0, 0]);
  assert.equal(values(ls.grad!), [1, 0, 0, 0]);
  assert.equal(values(hs.grad!), [0, 0, 1, 1]);
  assert.is(
    gradcheck(([a, l, h]) => fl.clamp(a, l, h), [rnd([2, 3]), rnd([3]).sub(0.5), rnd([2, 1]).add(0.5)]),
    null,
  );
  expectError(() => fl.clamp(x, 'a' as never), TypeError, 'ERR_ARG');
});

test('randLike/randnLike take the shape, dtype and device of the input unless told', () => {
  const x = fl.zeros([3, 4], { dtype: 'f64' });
  const u = fl.randLike(x);
  assert.equal([u.shape, u.dtype, u.device], [[3, 4], 'f64', 'cpu']);
  assert.ok(values(u).every((v) => v >= 0 && v < 1));
  assert.is(fl.randnLike(x, { dtype: 'f32' }).dtype, 'f32');
  assert.is(fl.randnLike(x, { requiresGrad: true }).requiresGrad, true);
  expectError(() => fl.randLike(fl.zeros([2], { dtype: 'i64' })), TypeError, 'ERR_DTYPE');
  expectError(() => fl.randnLike(x, { mean: 1 } as never), TypeError, 'ERR_ARG');
  assert.equal(values(fl.fullLike(x, 2, { dtype: 'i32' })), Array(12).fill(2));
});

test.run();
