import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib/index';
import { close, expectError } from '../helpers/reference';
import { values } from '../helpers/values';
import { gradcheck, rnd } from '../helpers/gradcheck';

/** f64 reference of the p-norm over the last dim of a row-major [rows, n] block. */
function refRows(v: number[], n: number, p: number): number[] {
  const out: number[] = [];
  for (let r = 0; r < v.length / n; r++) {
    const a = v.slice(r * n, r * n + n).map(Math.abs);
    if (p === Number.POSITIVE_INFINITY) out.push(Math.max(...a));
    else if (p === Number.NEGATIVE_INFINITY) out.push(Math.min(...a));
    else if (p === 0) out.push(a.filter((x) => x !== 0).length);
    else out.push(a.reduce((s, x) => s + x ** p, 0) ** (1 / p));
  }
  return out;
}

test('norm over the last dim matches the reference for p = 0, 1, 2, 3, 0.5, inf, -inf', () => {
  const x = rnd([4, 5]);
  for (const p of [0, 1, 2, 3, 0.5, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) {
    close(values(fl.norm(x, p, -1)), refRows(values(x), 5, p), 1e-10, 1e-12, `p=${p}`);
    assert.equal(fl.norm(x, p, 1, true).shape, [4, 1]);
  }
  close([x.norm().itemSync()], refRows(values(x), 20, 2), 1e-12);
  close([x.norm('fro', [0, 1]).itemSync()], refRows(values(x), 20, 2), 1e-12);
  close(values(x.norm(1, 0)), refRows(values(x.transpose(0, 1)), 4, 1), 1e-12);
  const f = fl.tensor([3, 4]);
  assert.is(f.norm().dtype, 'f32');
  close([f.norm().itemSync()], [5]);
  close(values(fl.zeros([0, 3]).norm(2, 0)), [0, 0, 0]);
});

test('norm refuses integer inputs, bad p, fro over 3 dims, inf over an empty dim', () => {
  expectError(() => fl.norm(fl.ones([3], { dtype: 'i64' })), TypeError, 'ERR_DTYPE', /i64/);
  expectError(() => fl.norm(fl.ones([3]), 'nuc' as never), TypeError, 'ERR_ARG', /nuclear/);
  expectError(() => fl.norm(fl.ones([2, 2, 2]), 'fro', [0, 1, 2]), RangeError, 'ERR_SHAPE');
  expectError(() => fl.norm(fl.ones([0, 2]), Number.POSITIVE_INFINITY, 0), RangeError, 'ERR_SHAPE');
  expectError(() => fl.norm(fl.ones([2]), 2, 3), RangeError, 'ERR_INDEX');
});

test('norm gradients for every p (f64 central differences)', () => {
  for (const p of [1, 2, 3, 1.5, 0.5, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) {
    assert.is(
      gradcheck(([x]) => fl.norm(x, p, 1), [rnd([3, 4])]),
      null,
      `p=${p}`,
    );
  }
  assert.is(
    gradcheck(([x]) => x.norm('fro', [0, 2], true), [rnd([2, 3, 2])]),
    null,
  );
});

test('norm subgradients: 0 at the zero vector (p = 2, 3), ties share the inf-norm gradient', () => {
  for (const p of [2, 3, 1.5]) {
    const z = fl.zeros([3], { dtype: 'f64', requiresGrad: true });
    z.norm(p).backward();
    assert.equal(values(z.grad!), [0, 0, 0], `p=${p}`);
  }
  const t = fl.tensor([3, -3, 1], { dtype: 'f64', requiresGrad: true });
  t.norm(Number.POSITIVE_INFINITY).backward();
  close(values(t.grad!), [0.5, -0.5, 0]);
  const o = fl.tensor([0, 2], { dtype: 'f64', requiresGrad: true });
  o.norm(1).backward();
  close(values(o.grad!), [0, 1]);
});

test.run();
