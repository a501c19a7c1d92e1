import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib';
import { close, fixtures, load, throwsCode } from '../fixtures/load';

const o = fixtures.optim;

function twoSteps(make: (p: fl.nn.Parameter) => fl.optim.Optimizer<{ lr: number }>, name: string): void {
  const p = new fl.nn.Parameter(load(o.p0).clone());
  const opt = make(p);
  p.grad = load(o.g0).clone();
  opt.step();
  close(p, o.results[name].after1, 1e-9, `${name} step 1`);
  p.grad = load(o.g1).clone();
  opt.step();
  close(p, o.results[name].after2, 1e-9, `${name} step 2`);
}

test('SGD matches PyTorch', () => twoSteps((p) => new fl.optim.SGD([p], { lr: 0.1 }), 'sgd'));
test('SGD with momentum, dampening and weight decay matches PyTorch', () =>
  twoSteps((p) => new fl.optim.SGD([p], { lr: 0.1, momentum: 0.9, dampening: 0.1, weightDecay: 0.01 }), 'sgd_momentum'));
test('SGD with Nesterov momentum matches PyTorch', () => twoSteps((p) => new fl.optim.SGD([p], { lr: 0.1, momentum: 0.9, nesterov: true }), 'sgd_nesterov'));
test('Adam with weight decay matches PyTorch', () =>
  twoSteps((p) => new fl.optim.Adam([p], { lr: 0.01, betas: [0.8, 0.9], eps: 1e-6, weightDecay: 0.1 }), 'adam'));
test('AdamW matches PyTorch', () => twoSteps((p) => new fl.optim.AdamW([p], { lr: 0.01, weightDecay: 0.1 }), 'adamw'));

test('param groups keep their own lr; zeroGrad clears or zeroes', () => {
  const a = new fl.nn.Parameter(fl.ones([2])), b = new fl.nn.Parameter(fl.ones([2]));
  const opt = new fl.optim.SGD([{ params: [a] }, { params: [b], lr: 1 }], { lr: 0.1 });
  a.grad = fl.ones([2]);
  b.grad = fl.ones([2]);
  opt.step();
  assert.equal(a.toArray(), [0.8999999761581421, 0.8999999761581421]);
  assert.equal(b.toArray(), [0, 0]);
  opt.zeroGrad(false);
  assert.equal(a.grad?.toArray(), [0, 0]);
  opt.zeroGrad();
  assert.is(a.grad, null);
  throwsCode(() => new fl.optim.SGD([{ params: [a] }, { params: [a] }]), 'ERR_ARG');
  throwsCode(() => new fl.optim.SGD([a], { lr: 0.1, nesterov: true }), 'ERR_ARG');
});

test('the fused native step rejects mismatched state with a coded error', () => {
  const { native } = require('../../lib/native') as typeof import('../../lib/native');
  const p = fl.zeros([3]), g = fl.zeros([4]);
  assert.throws(() => native.adamStep([p.handle], [g.handle], [p.handle], [p.handle], 0.1, 0.9, 0.999, 1e-8, 0, 1, false),
    (e: { code?: string }) => e.code === 'ERR_SHAPE');
  assert.throws(() => native.sgdStep([p.handle], [], [], 0.1, 0, 0, 0, false, true), (e: { code?: string }) => e.code === 'ERR_ARG');
});

test('Adam state dict round-trips', () => {
  const p = new fl.nn.Parameter(load(o.p0).clone());
  const opt = new fl.optim.Adam([p], { lr: 0.01 });
  p.grad = load(o.g0).clone();
  opt.step();
  const sd = opt.stateDict();
  assert.equal(sd.paramGroups[0].params, [0]);
  assert.is(sd.state[0].step, 1);
  const q = new fl.nn.Parameter(p.clone());
  const opt2 = new fl.optim.Adam([q], { lr: 0.5 });
  opt2.loadStateDict(sd);
  assert.is(opt2.paramGroups[0].lr, 0.01);
  p.grad = load(o.g1).clone();
  q.grad = load(o.g1).clone();
  opt.step();
  opt2.step();
  assert.equal(p.toArray(), q.toArray());
});

test('clipGradNorm_ and clipGradValue_', () => {
  const p = new fl.nn.Parameter(fl.zeros([2]));
  p.grad = fl.tensor([3, 4], { dtype: 'f32' });
  const norm = fl.optim.clipGradNorm_([p], 1);
  assert.ok(Math.abs(norm.itemSync() - 5) < 1e-5);
  const g = p.grad.dataSync() as Float32Array;
  assert.ok(Math.abs(g[0] - 0.6) < 1e-5 && Math.abs(g[1] - 0.8) < 1e-5);
  fl.optim.clipGradValue_([p], 0.7);
  assert.ok(Math.abs((p.grad.dataSync() as Float32Array)[1] - 0.7) < 1e-6);
});

test.run();
