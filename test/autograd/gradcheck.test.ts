/** Autograd's behaviour: accumulation, explicit gradients, noGrad/detach, hooks, errors; and composite chains checked against central differences. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib/index';
import { gradcheck, rnd } from '../helpers/gradcheck';

fl.manualSeed(1234);

// Every op's own gradient check runs in the op harness (test/ops/harness/); these two chain ops.
test('gradcheck: a cast to f32 and back keeps the graph', () => {
  const mismatch = gradcheck(([a]) => a.to('f32').to('f64').mul(2), [rnd([2, 3])], { eps: 1e-2, atol: 1e-2, rtol: 1e-2 });
  assert.is(mismatch, null, String(mismatch));
});

test('gradcheck: a composite mlp layer', () => {
  const mismatch = gradcheck(([x, w, b]) => x.matmul(w).add(b).tanh().sum(1), [rnd([4, 3]), rnd([3, 5]), rnd([5])]);
  assert.is(mismatch, null, String(mismatch));
});

test('gradient accumulates into .grad across backward calls', () => {
  const x = fl.tensor([1, 2, 3], { dtype: 'f64', requiresGrad: true });
  x.mul(2).sum().backward();
  x.mul(3).sum().backward();
  assert.equal(Array.from(x.grad!.dataSync(), Number), [5, 5, 5]);
});

test('backward with an explicit gradient', () => {
  const x = fl.tensor([1, 2], { dtype: 'f64', requiresGrad: true });
  x.mul(x).backward(fl.tensor([1, 10], { dtype: 'f64' }));
  assert.equal(Array.from(x.grad!.dataSync(), Number), [2, 40]);
});

test('noGrad records nothing; detach cuts the graph', () => {
  const x = fl.tensor([1, 2], { requiresGrad: true });
  const y = fl.noGrad(() => x.mul(2));
  assert.is(y.requiresGrad, false);
  assert.is(x.detach().mul(2).requiresGrad, false);
});

test('hook on a leaf fires once, when its gradient is final, before backward ends', () => {
  const w1 = fl.tensor([1, 2], { dtype: 'f64', requiresGrad: true });
  const w2 = fl.tensor([3, 4], { dtype: 'f64', requiresGrad: true });
  const events: string[] = [];
  w2.registerHook((g) => {
    events.push(`w2:${Array.from(g.dataSync(), Number).join(',')}`);
  });
  w1.registerHook((g) => {
    events.push(`w1:${Array.from(g.dataSync(), Number).join(',')}`);
  });
  // w2 is used twice (its grad is the sum of two contributions); w1 feeds the earlier layer.
  const h = w1.mul(2);
  const y = h.mul(w2).add(w2.mul(3)).sum();
  y.backward();
  assert.equal(events.length, 2);
  assert.ok(events.includes('w2:5,7'));
  assert.ok(events.includes('w1:6,8'));
});

test('hook can replace the gradient', () => {
  const x = fl.tensor([1, 2], { dtype: 'f64', requiresGrad: true });
  x.registerHook((g) => g.mul(10));
  x.sum().backward();
  assert.equal(Array.from(x.grad!.dataSync(), Number), [10, 10]);
});

test('backward on a non-scalar without gradient throws RangeError', () => {
  const x = fl.tensor([1, 2], { requiresGrad: true });
  assert.throws(
    () => x.mul(2).backward(),
    (e: Error) => e instanceof RangeError && /one-element outputs/.test(e.message),
  );
});

test.run();
