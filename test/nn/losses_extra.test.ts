import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib';
import { checkCase, close, fixtureFile, load, numericGradCheck, throwsCode } from '../fixtures/load';

const F = fl.nn.functional;
const fx = fixtureFile('first_hour').cases;

test('binaryCrossEntropy matches PyTorch (mean, weighted sum, none) for input and target', () => {
  checkCase(fx.bce, ({ x, y }) => F.binaryCrossEntropy(x, y));
  checkCase(fx.bce_weight_sum, ({ x, y }) =>
    F.binaryCrossEntropy(x, y, { ...fx.bce_weight_sum.options, weight: load(fx.bce_weight_sum.weight) }),
  );
  checkCase(fx.bce_none, ({ x, y }) => F.binaryCrossEntropy(x, y, fx.bce_none.options));
});

test("binaryCrossEntropy at 0 and 1: logs clamped to -100, PyTorch's input gradient", () => {
  const c = fx.bce_edges;
  checkCase(c, ({ x }) => F.binaryCrossEntropy(x, load(c.target), c.options));
  assert.equal(c.output.data.slice(0, 2), [30, 40]);
});

test("klDiv matches PyTorch for every reduction ('batchmean' included) and log targets", () => {
  for (const r of ['batchmean', 'mean', 'sum', 'none'])
    checkCase(fx[`kl_div_${r}`], ({ x, y }) => F.klDiv(x, y, fx[`kl_div_${r}`].options));
  checkCase(fx.kl_div_log_target, ({ x, y }) => F.klDiv(x, y, fx.kl_div_log_target.options));
});

test('klDiv: a zero target contributes 0 and no NaN gradient', () => {
  const c = fx.kl_div_zero_target;
  checkCase(c, ({ x }) => F.klDiv(x, load(c.target), c.options));
  const t = load(c.target, 'f64', true);
  F.klDiv(load(c.inputs.x), t, { reduction: 'sum' }).backward();
  const g = (t.grad as fl.Tensor).dataSync() as Float64Array;
  assert.is(g[1], 0);
  assert.ok(g.every(Number.isFinite));
});

test('huberLoss matches PyTorch (delta 1, 0.5, 2.5; every reduction); l1Loss too', () => {
  for (const name of ['huber', 'huber_delta', 'huber_sum']) checkCase(fx[name], ({ x, y }) => F.huberLoss(x, y, fx[name].options));
  checkCase(fx.l1, ({ x, y }) => F.l1Loss(x, y));
});

test('the loss layers give the functional results', () => {
  const b = fx.bce_weight_sum;
  const w = load(b.weight);
  close(new fl.nn.BCELoss({ weight: w, reduction: 'sum' }).forward(load(b.inputs.x), load(b.inputs.y)), b.output);
  const k = fx.kl_div_batchmean;
  close(new fl.nn.KLDivLoss({ reduction: 'batchmean' }).forward(load(k.inputs.x), load(k.inputs.y)), k.output);
  const h = fx.huber_delta;
  close(new fl.nn.HuberLoss(h.options).forward(load(h.inputs.x), load(h.inputs.y)), h.output);
  close(new fl.nn.L1Loss().forward(load(fx.l1.inputs.x), load(fx.l1.inputs.y)), fx.l1.output);
});

test('loss gradients pass a numerical check in f64', () => {
  fl.manualSeed(8);
  const y = fl.rand([3, 4], { dtype: 'f64' });
  numericGradCheck((x) => F.binaryCrossEntropy(x, y), fl.rand([3, 4], { dtype: 'f64', low: 0.1, high: 0.9 }));
  const t = fl.rand([3, 4], { dtype: 'f64', low: 0.1, high: 1 });
  numericGradCheck((x) => F.klDiv(x, t, { reduction: 'batchmean' }), fl.randn([3, 4], { dtype: 'f64' }));
  const logp = fl.randn([3, 4], { dtype: 'f64' });
  numericGradCheck((tt) => F.klDiv(logp, tt, { reduction: 'sum' }), t);
  const z = fl.randn([3, 4], { dtype: 'f64' });
  numericGradCheck((x) => F.huberLoss(x, z, { delta: 0.7 }), fl.randn([3, 4], { dtype: 'f64' }));
});

test('losses: coded errors', () => {
  const x = fl.rand([2, 3]);
  throwsCode(() => F.binaryCrossEntropy(x, fl.rand([3, 2])), 'ERR_SHAPE');
  throwsCode(() => F.binaryCrossEntropy(x, x, { weight: fl.rand([2]) }), 'ERR_SHAPE');
  throwsCode(() => F.binaryCrossEntropy(x, x, { reduction: 'batchmean' as never }), 'ERR_ARG');
  throwsCode(() => F.binaryCrossEntropy(x, x, { posWeight: x } as never), 'ERR_ARG');
  throwsCode(() => F.klDiv(x, x, { reduction: 'avg' as never }), 'ERR_ARG');
  throwsCode(() => F.klDiv(x, x, { logTarget: 'yes' as never }), 'ERR_ARG');
  throwsCode(() => F.huberLoss(x, x, { delta: 0 }), 'ERR_RANGE');
  throwsCode(() => new fl.nn.HuberLoss({ beta: 1 } as never), 'ERR_ARG');
  throwsCode(() => new fl.nn.BCELoss({ reduction: 'avg' as never }), 'ERR_ARG');
  throwsCode(() => F.binaryCrossEntropy(fl.tensor([1, 0], { dtype: 'i64' }), fl.tensor([1, 0])), 'ERR_DTYPE');
});

test.run();
