import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib/index';
import { close } from '../helpers/reference';
import { values } from '../helpers/values';

function gradOf(t: fl.Tensor): fl.Tensor {
  if (!t.grad) throw new Error('no gradient');
  return t.grad;
}

/** Kernels the backward of `op(a, b).sum()` runs, and a's gradient. */
function backwardKernels(op: (a: fl.Tensor, b: fl.Tensor) => fl.Tensor, a: fl.Tensor, b: fl.Tensor): { kernels: number; grad: number[] } {
  a.grad = null;
  b.grad = null;
  const loss = op(a, b).sum();
  fl.syncSync();
  const prof = fl.profiler.start({ activities: ['cpu'] });
  loss.backward();
  fl.syncSync();
  prof.stop();
  const kernels = prof.keyAverages().reduce((n, r) => n + r.calls, 0);
  return { kernels, grad: values(gradOf(a)) };
}

test('mul, div, sub, maximum: no gradient is computed for an operand that does not require grad', () => {
  const av = [1.5, -2, 3, 0.5];
  const ops: [string, (a: fl.Tensor, b: fl.Tensor) => fl.Tensor, (a: number, b: number) => number][] = [
    ['mul', (a, b) => a.mul(b), (_a, b) => b],
    ['div', (a, b) => a.div(b), (_a, b) => 1 / b],
    ['sub', (a, b) => a.sub(b), () => 1],
    ['maximum', (a, b) => fl.maximum(a, b), (a, b) => (a > b ? 1 : a === b ? 0.5 : 0)],
  ];
  for (const [name, op, da] of ops) {
    const c = fl.tensor([2, 4, -1, 0.5]);
    const both = backwardKernels(op, fl.tensor(av).requiresGrad_(), c.clone().requiresGrad_());
    const one = backwardKernels(op, fl.tensor(av).requiresGrad_(), c);
    assert.ok(one.kernels < both.kernels, `${name}: ${one.kernels} kernels with a constant operand, ${both.kernels} with two leaves`);
    const cv = values(c);
    close(
      one.grad,
      av.map((v, i) => da(v, cv[i])),
      1e-6,
      1e-6,
      `${name} gradient`,
    );
    assert.equal(one.grad, both.grad, `${name}: the same gradient either way`);
  }
});

test.run();
