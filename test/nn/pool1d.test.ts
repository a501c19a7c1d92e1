import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib';
import { checkCase, fixtureFile, load, numericGradCheck, throwsCode } from '../fixtures/load';

const F = fl.nn.functional;
const fx = fixtureFile('first_hour').cases;

test('maxPool1d (padding, ceil mode, dilation) matches PyTorch forward and backward', () => {
  for (const name of ['max_pool1d', 'max_pool1d_dilated']) {
    const { kernelSize, ...o } = fx[name].options;
    checkCase(fx[name], ({ x }) => F.maxPool1d(x, kernelSize, o));
  }
});

test("maxPool1dWithIndices returns PyTorch's argmax positions", () => {
  const c = fx.max_pool1d;
  const { kernelSize, ...o } = c.options;
  const [, idx] = F.maxPool1dWithIndices(load(c.inputs.x), kernelSize, o);
  assert.is(idx.dtype, 'i64');
  assert.equal([...idx.shape], c.indices.shape);
  assert.equal(Array.from(idx.dataSync() as BigInt64Array, Number), c.indices.data);
});

test('avgPool1d with and without padded cells matches PyTorch', () => {
  for (const name of ['avg_pool1d', 'avg_pool1d_include_pad']) {
    const { kernelSize, ...o } = fx[name].options;
    checkCase(fx[name], ({ x }) => F.avgPool1d(x, kernelSize, o));
  }
});

test('adaptiveAvgPool1d (shorter and longer outputs) matches PyTorch', () => {
  for (const name of ['adaptive_avg_pool1d', 'adaptive_avg_pool1d_up'])
    checkCase(fx[name], ({ x }) => F.adaptiveAvgPool1d(x, fx[name].options.outputSize));
});

test('the layers give the functional results and print as PyTorch', () => {
  const x = load(fx.max_pool1d.inputs.x);
  const same = (a: fl.Tensor, b: fl.Tensor) => assert.ok(a.eq(b).all().itemSync());
  same(
    new fl.nn.MaxPool1d(3, { stride: 2, padding: 1, ceilMode: true }).forward(x),
    F.maxPool1d(x, 3, { stride: 2, padding: 1, ceilMode: true }),
  );
  same(new fl.nn.AvgPool1d([4], { stride: 3, padding: 2 }).forward(x), F.avgPool1d(x, 4, { stride: 3, padding: 2 }));
  same(new fl.nn.AdaptiveAvgPool1d(4).forward(x), F.adaptiveAvgPool1d(x, 4));
  assert.is(new fl.nn.MaxPool1d(3).toString(), 'MaxPool1d(kernel_size=3, stride=3, padding=0, dilation=1, ceil_mode=False)');
  assert.is(new fl.nn.AvgPool1d(3, { stride: 2 }).toString(), 'AvgPool1d(kernel_size=(3,), stride=(2,), padding=(0,))');
  assert.is(new fl.nn.AdaptiveAvgPool1d(4).toString(), 'AdaptiveAvgPool1d(output_size=4)');
});

test('1-d pooling gradients pass a numerical check in f64', () => {
  fl.manualSeed(4);
  const r = fl.randn([2, 2, 3], { dtype: 'f64' });
  numericGradCheck((x) => F.maxPool1d(x, 2, { padding: 1 }).mul(r).sum(), fl.randn([2, 2, 5], { dtype: 'f64' }));
  numericGradCheck(
    (x) => F.avgPool1d(x, 3, { stride: 2, padding: 1, countIncludePad: false }).mul(r).sum(),
    fl.randn([2, 2, 6], { dtype: 'f64' }),
  );
  numericGradCheck((x) => F.adaptiveAvgPool1d(x, 3).mul(r).sum(), fl.randn([2, 2, 7], { dtype: 'f64' }));
});

test('1-d pooling: coded errors, and options it cannot take are refused', () => {
  const x = fl.randn([2, 3, 8]);
  throwsCode(() => F.maxPool1d(fl.randn([2, 3, 1, 8]), 2), 'ERR_SHAPE');
  throwsCode(() => F.maxPool1d(x, 3, { padding: 2 }), 'ERR_RANGE');
  throwsCode(() => F.maxPool1d(fl.randn([1, 1, 2]), 5, { padding: 1 }), 'ERR_SHAPE');
  throwsCode(() => F.maxPool1d(x, 0), 'ERR_RANGE');
  throwsCode(() => F.maxPool1d(x, [2, 2] as never), 'ERR_ARG');
  throwsCode(() => F.maxPool1d(x, 2, { returnIndices: true } as never), 'ERR_ARG');
  throwsCode(() => F.avgPool1d(x, 2, { dilation: 2 } as never), 'ERR_ARG');
  throwsCode(() => F.avgPool1d(x, 2, { divisorOverride: 2 } as never), 'ERR_ARG');
  throwsCode(() => F.adaptiveAvgPool1d(x, 0), 'ERR_RANGE');
  throwsCode(() => new fl.nn.MaxPool1d(2, { ceil: true } as never), 'ERR_ARG');
});

test.run();
