import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib';
import { checkCase, fixtures, numericGradCheck, throwsCode } from '../fixtures/load';

const F = fl.nn.functional;

test('maxPool2d (padding, ceil mode) matches PyTorch forward and backward', () => {
  const c = fixtures.max_pool2d;
  checkCase(c, ({ x }) => F.maxPool2d(x, c.options.kernelSize, c.options));
});

test('avgPool2d without padded cells matches PyTorch', () => {
  const c = fixtures.avg_pool2d;
  checkCase(c, ({ x }) => F.avgPool2d(x, c.options.kernelSize, c.options));
});

test('adaptiveAvgPool2d with uneven bins matches PyTorch', () => {
  const c = fixtures.adaptive_avg_pool2d;
  checkCase(c, ({ x }) => F.adaptiveAvgPool2d(x, c.options.outputSize));
});

test('pooling gradients pass a numerical check in f64', () => {
  fl.manualSeed(2);
  const r = fl.randn([1, 2, 2, 2], { dtype: 'f64' });
  numericGradCheck((x) => F.maxPool2d(x, 2).mul(r).sum(), fl.randn([1, 2, 4, 5], { dtype: 'f64' }));
  numericGradCheck((x) => F.avgPool2d(x, 3, { stride: 2, padding: 1 }).mul(r).sum(), fl.randn([1, 2, 4, 3], { dtype: 'f64' }));
  numericGradCheck((x) => F.adaptiveAvgPool2d(x, 2).mul(r).sum(), fl.randn([1, 2, 5, 3], { dtype: 'f64' }));
});

test('maxPool2dWithIndices returns flat argmax positions', () => {
  const x = fl.tensor([[[[1, 5], [3, 2]]]], { dtype: 'f32' });
  const [y, idx] = F.maxPool2dWithIndices(x, 2);
  assert.equal(y.toArray(), [[[[5]]]]);
  assert.equal(idx.toArray(), [[[[1]]]]);
});

test('pool layers and errors', () => {
  assert.equal([...new fl.nn.MaxPool2d(2).forward(fl.zeros([2, 3, 7, 7])).shape], [2, 3, 3, 3]);
  assert.equal([...new fl.nn.AdaptiveAvgPool2d(1).forward(fl.zeros([2, 3, 7, 7])).shape], [2, 3, 1, 1]);
  throwsCode(() => F.maxPool2d(fl.zeros([3, 7, 7]), 2), 'ERR_SHAPE');
  throwsCode(() => F.maxPool2d(fl.zeros([1, 1, 1, 1]), 2), 'ERR_SHAPE');
  throwsCode(() => F.maxPool2d(fl.zeros([1, 1, 4, 4]), 2, { padding: 2 }), 'ERR_ARG', TypeError);
});

test.run();
