import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib';
import { checkCase, close, fixtures, load, numericGradCheck, throwsCode } from '../fixtures/load';

const F = fl.nn.functional;

test('batchNorm in training matches PyTorch and updates running statistics', () => {
  const c = fixtures.batch_norm_train;
  const rm = load(c.runningMean),
    rv = load(c.runningVar);
  checkCase(c, ({ x, w, b }) => F.batchNorm(x, rm, rv, { weight: w, bias: b, training: true }));
  close(rm, c.newRunningMean, 1e-9, 'running mean');
  close(rv, c.newRunningVar, 1e-9, 'running var');
});

test('batchNorm in eval uses the running statistics', () => {
  const c = fixtures.batch_norm_eval;
  checkCase(c, ({ x, w, b }) => F.batchNorm(x, load(c.runningMean), load(c.runningVar), { weight: w, bias: b, training: false }));
});

test('layerNorm matches PyTorch', () => {
  checkCase(fixtures.layer_norm, ({ x, w, b }) => F.layerNorm(x, [7, 6], w, b));
});

test('groupNorm matches PyTorch', () => {
  checkCase(fixtures.group_norm, ({ x, w, b }) => F.groupNorm(x, 2, w, b));
});

test('layer and group norm gradients pass a numerical check in f64', () => {
  fl.manualSeed(9);
  const r = fl.randn([2, 4, 3], { dtype: 'f64' });
  numericGradCheck((x) => F.layerNorm(x, [4, 3]).mul(r).sum(), fl.randn([2, 4, 3], { dtype: 'f64' }));
  numericGradCheck((x) => F.groupNorm(x, 2).mul(r).sum(), fl.randn([2, 4, 3], { dtype: 'f64' }));
});

test('layerNorm in f32 agrees with the f64 golden values', () => {
  const c = fixtures.layer_norm;
  close(F.layerNorm(load(c.inputs.x, 'f32'), [7, 6], load(c.inputs.w, 'f32'), load(c.inputs.b, 'f32')), c.output, 1e-5);
});

test('BatchNorm2d layer: buffers in the state dict, train/eval behaviour', () => {
  const bn = new fl.nn.BatchNorm2d(3);
  assert.equal(Object.keys(bn.stateDict()), ['weight', 'bias', 'running_mean', 'running_var', 'num_batches_tracked']);
  fl.manualSeed(3);
  const x = fl.randn([4, 3, 2, 2]).mul(2).add(1);
  bn.forward(x);
  assert.is(bn.getBuffer('num_batches_tracked')?.itemSync(), 1);
  const m = bn.runningMean?.dataSync() as Float32Array;
  assert.ok(m.some((v) => v !== 0));
  bn.eval();
  const y = bn.forward(x);
  assert.equal([...y.shape], [4, 3, 2, 2]);
  throwsCode(() => bn.forward(fl.zeros([4, 3])), 'ERR_SHAPE');
  throwsCode(() => new fl.nn.GroupNorm(3, 4), 'ERR_RANGE');
  throwsCode(() => F.layerNorm(fl.zeros([2, 3]), [4]), 'ERR_SHAPE');
});

test('BatchNorm momentum null keeps the cumulative average of the batch statistics (as PyTorch)', () => {
  const bn = new fl.nn.BatchNorm1d(2, { momentum: null, affine: false, dtype: 'f64' });
  const batches = [
    [
      [1, 10],
      [3, 14],
    ],
    [
      [2, 0],
      [6, 2],
      [7, 4],
    ],
    [
      [-1, 5],
      [1, 5],
    ],
  ];
  for (const b of batches) bn.forward(fl.tensor(b, { dtype: 'f64' }));
  // Hand-computed: the plain mean of each batch's mean and unbiased variance, averaged with the
  // initial statistics dropped (factor 1/n: the first batch replaces them).
  const means = batches.map((b) => [0, 1].map((c) => b.reduce((s, r) => s + r[c], 0) / b.length));
  const vars = batches.map((b, k) => [0, 1].map((c) => b.reduce((s, r) => s + (r[c] - means[k][c]) ** 2, 0) / (b.length - 1)));
  const avg = (xs: number[][]) => [0, 1].map((c) => xs.reduce((s, x) => s + x[c], 0) / xs.length);
  const rm = Array.from(bn.runningMean?.dataSync() as Float64Array),
    rv = Array.from(bn.runningVar?.dataSync() as Float64Array);
  avg(means).forEach((m, c) => assert.ok(Math.abs(rm[c] - m) < 1e-12, `mean ${c}: ${rm[c]} vs ${m}`));
  avg(vars).forEach((v, c) => assert.ok(Math.abs(rv[c] - v) < 1e-12, `var ${c}: ${rv[c]} vs ${v}`));
  assert.is(Number(bn.getBuffer('num_batches_tracked')?.itemSync()), 3);
});

test('norm layer options are checked at construction', () => {
  throwsCode(() => new fl.nn.BatchNorm2d(3, { momentum: 'fast' as never }), 'ERR_ARG');
  throwsCode(() => new fl.nn.BatchNorm2d(3, { momentum: 2 }), 'ERR_RANGE');
  throwsCode(() => new fl.nn.BatchNorm2d(3, { trackRunningStat: false } as never), 'ERR_ARG');
  throwsCode(() => new fl.nn.LayerNorm([4], { eps: -1 }), 'ERR_RANGE');
  throwsCode(() => new fl.nn.LayerNorm([4], { affine: true, elementwiseAffine: false }), 'ERR_ARG');
  throwsCode(() => new fl.nn.GroupNorm(2, 3), 'ERR_RANGE');
  throwsCode(() => F.batchNorm(fl.zeros([2, 3]), null, null, { momentum: null as never }), 'ERR_ARG');
  throwsCode(() => F.layerNorm(fl.zeros([2, 3]), [3], fl.ones([4])), 'ERR_SHAPE');
  assert.is(new fl.nn.LayerNorm(4, { elementwiseAffine: false }).weight, null);
});

test.run();
