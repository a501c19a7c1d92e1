import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib';
import { checkCase, fixtures, numericGradCheck, throwsCode } from '../fixtures/load';

const F = fl.nn.functional;

test('crossEntropy with ignoreIndex and label smoothing matches PyTorch', () => {
  const c = fixtures.cross_entropy;
  checkCase(c, ({ x, t }) => F.crossEntropy(x, t, c.options), 1e-9, ['t']);
});

test('crossEntropy with sum reduction matches PyTorch', () => {
  checkCase(fixtures.cross_entropy_sum, ({ x, t }) => F.crossEntropy(x, t, { reduction: 'sum' }), 1e-9, ['t']);
});

test('crossEntropy over [N, C, d] with no reduction matches PyTorch', () => {
  checkCase(fixtures.cross_entropy_spatial, ({ x, t }) => F.crossEntropy(x, t, { reduction: 'none' }), 1e-9, ['t']);
});

test('crossEntropy with class weights and an ignored target matches PyTorch', () => {
  checkCase(fixtures.cross_entropy_weighted, ({ x, t, w }) => F.crossEntropy(x, t, { weight: w.detach() }), 1e-9, ['t']);
});

for (const red of ['mean', 'sum', 'none']) {
  test(`crossEntropy with class weights, label smoothing and an ignored target (${red}) matches PyTorch`, () => {
    const c = fixtures[`cross_entropy_weighted_smoothing_${red}`];
    checkCase(c, ({ x, t, w }) => F.crossEntropy(x, t, { ...c.options, weight: w.detach() }), 1e-9, ['t']);
  });
}

test('crossEntropy with class probabilities matches PyTorch', () => {
  const c = fixtures.cross_entropy_probs;
  checkCase(c, ({ x, t }) => F.crossEntropy(x, t, c.options));
});

test('fused crossEntropy gradient passes a numerical check in f64', () => {
  fl.manualSeed(4);
  const t = fl.tensor([1, 0, 3], { dtype: 'i64' });
  numericGradCheck((x) => F.crossEntropy(x, t, { labelSmoothing: 0.05 }), fl.randn([3, 4], { dtype: 'f64' }));
});

test('nllLoss, mseLoss, l1Loss, smoothL1Loss, BCE with logits', () => {
  const x = fl.tensor([
    [0.5, -1.0],
    [2.0, 0.0],
  ]);
  const lp = x.logSoftmax(1);
  const t = fl.tensor([1, 0], { dtype: 'i64' });
  assert.ok(Math.abs(F.nllLoss(lp, t).itemSync() - F.crossEntropy(x, t).itemSync()) < 1e-6);
  const y = fl.tensor([
    [0.0, 1.0],
    [1.0, 3.0],
  ]);
  assert.ok(Math.abs(F.mseLoss(x, y).itemSync() - (0.25 + 4 + 1 + 9) / 4) < 1e-6);
  assert.ok(Math.abs(F.l1Loss(x, y).itemSync() - (0.5 + 2 + 1 + 3) / 4) < 1e-6);
  // |d| = 0.5, 2, 1, 3 with beta 1: 0.125, 1.5, 0.5, 2.5
  assert.ok(Math.abs(F.smoothL1Loss(x, y).itemSync() - (0.125 + 1.5 + 0.5 + 2.5) / 4) < 1e-6);
  const p = fl.tensor([
    [1.0, 0.0],
    [0.0, 1.0],
  ]);
  const expected = [0.5, -1, 2, 0].map((v, i) => {
    const yy = [1, 0, 0, 1][i];
    return -(yy * Math.log(1 / (1 + Math.exp(-v))) + (1 - yy) * Math.log(1 - 1 / (1 + Math.exp(-v))));
  });
  assert.ok(Math.abs(F.binaryCrossEntropyWithLogits(x, p).itemSync() - expected.reduce((a, b) => a + b) / 4) < 1e-6);
});

test('loss errors carry codes', () => {
  throwsCode(() => F.crossEntropy(fl.zeros([3, 4]), fl.tensor([1, 2], { dtype: 'i64' })), 'ERR_SHAPE');
  throwsCode(() => F.mseLoss(fl.zeros([3]), fl.zeros([4])), 'ERR_SHAPE');
  throwsCode(
    () => F.crossEntropy(fl.zeros([3, 4]), fl.tensor([1, 2, 3], { dtype: 'i64' }), { reduction: 'avg' as 'mean' }),
    'ERR_ARG',
    TypeError,
  );
});

test('crossEntropy with class-weighted smoothed probabilities matches PyTorch', () => {
  const c = fixtures.cross_entropy_probs_weighted;
  checkCase(c, ({ x, t, w }) => F.crossEntropy(x, t.detach(), { weight: w.detach(), labelSmoothing: c.options.labelSmoothing }));
});

test('float class targets say how to make integer ones; options are checked', () => {
  const x = fl.zeros([3, 4]);
  try {
    F.crossEntropy(x, fl.tensor([1, 0, 3], { dtype: 'f32' }));
    assert.unreachable('f32 class indices accepted');
  } catch (e) {
    const m = (e as Error).message;
    assert.is((e as { code?: string }).code, 'ERR_DTYPE');
    assert.ok(m.startsWith('crossEntropy: target must be an integer class-index tensor (i64) of shape [3]'), m);
    assert.ok(m.includes("target.to('i64')") && m.includes('probabilities'), m);
  }
  throwsCode(() => F.nllLoss(x, fl.tensor([1, 0, 3], { dtype: 'f32' })), 'ERR_DTYPE');
  throwsCode(() => F.crossEntropy(x, fl.zeros([3, 5])), 'ERR_SHAPE');
  throwsCode(() => F.crossEntropy(x, fl.tensor([1, 0, 3]), { labelSmothing: 0.1 } as never), 'ERR_ARG');
  throwsCode(() => new fl.nn.CrossEntropyLoss({ labelSmoothing: 2 }), 'ERR_RANGE');
  throwsCode(() => new fl.nn.CrossEntropyLoss({ reduction: 'avg' as never }), 'ERR_ARG');
  throwsCode(() => new fl.nn.SmoothL1Loss({ beta: -1 }), 'ERR_RANGE');
  throwsCode(() => F.mseLoss(x, undefined as never), 'ERR_ARG');
});

test.run();
