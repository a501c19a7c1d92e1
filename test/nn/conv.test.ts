import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib';
import { checkCase, fixtures, numericGradCheck, throwsCode, load, close } from '../fixtures/load';

const F = fl.nn.functional;

test('conv2d matches PyTorch forward and backward', () => {
  checkCase(fixtures.conv2d_basic, ({ x, w, b }) => F.conv2d(x, w, b));
});

test('conv2d with stride, padding, dilation and groups matches PyTorch', () => {
  const c = fixtures.conv2d_strided;
  checkCase(c, ({ x, w, b }) => F.conv2d(x, w, b, c.options));
});

test('convTranspose2d matches PyTorch forward and backward', () => {
  const c = fixtures.conv_transpose2d;
  checkCase(c, ({ x, w, b }) => F.convTranspose2d(x, w, b, c.options));
});

test('conv2d in f32 agrees with the f64 golden values', () => {
  const c = fixtures.conv2d_basic;
  const y = F.conv2d(load(c.inputs.x, 'f32'), load(c.inputs.w, 'f32'), load(c.inputs.b, 'f32'));
  close(y, c.output, 1e-4);
});

test('conv2d gradients pass a numerical check in f64', () => {
  fl.manualSeed(1);
  const w = fl.randn([2, 3, 2, 3], { dtype: 'f64' });
  const r = fl.randn([1, 2, 4, 2], { dtype: 'f64' });
  numericGradCheck((x) => F.conv2d(x, w, null, { stride: [1, 2], padding: 1 }).mul(r).sum(), fl.randn([1, 3, 3, 4], { dtype: 'f64' }));
  const x = fl.randn([2, 3, 3, 4], { dtype: 'f64' });
  const r2 = fl.randn([2, 2, 2, 2], { dtype: 'f64' });
  numericGradCheck((wt) => F.conv2d(x, wt, null, { stride: 2, padding: [0, 1] }).mul(r2).sum(), w);
});

test('convTranspose2d gradients pass a numerical check in f64', () => {
  fl.manualSeed(6);
  const w = fl.randn([4, 1, 3, 2], { dtype: 'f64' });
  const opts = { stride: 2, padding: [1, 0] as [number, number], outputPadding: 1, groups: 2 };
  const r = fl.randn([1, 2, 6, 7], { dtype: 'f64' });
  const x = fl.randn([1, 4, 3, 3], { dtype: 'f64' });
  numericGradCheck((xx) => F.convTranspose2d(xx, w, null, opts).mul(r).sum(), x);
  numericGradCheck((ww) => F.convTranspose2d(x, ww, null, opts).mul(r).sum(), w);
});

test('Conv2d layer: shapes, default init bounds, parameters', () => {
  const conv = new fl.nn.Conv2d(4, 8, 3, { padding: 1 });
  assert.equal([...conv.weight.shape], [8, 4, 3, 3]);
  const bound = 1 / Math.sqrt(4 * 9);
  const w = conv.weight.dataSync() as Float32Array;
  assert.ok(w.every((v) => Math.abs(v) <= bound + 1e-7));
  assert.equal([...conv.forward(fl.zeros([2, 4, 5, 5])).shape], [2, 8, 5, 5]);
  assert.is(conv.parameters().length, 2);
  const t = new fl.nn.ConvTranspose2d(8, 4, 2, { stride: 2 });
  assert.equal([...t.forward(fl.zeros([1, 8, 3, 3])).shape], [1, 4, 6, 6]);
});

test('conv2d rejects bad shapes with RangeError codes', () => {
  throwsCode(() => F.conv2d(fl.zeros([1, 3, 5]), fl.zeros([2, 3, 3, 3])), 'ERR_SHAPE');
  throwsCode(() => F.conv2d(fl.zeros([1, 3, 5, 5]), fl.zeros([2, 4, 3, 3])), 'ERR_SHAPE');
  throwsCode(() => F.conv2d(fl.zeros([1, 3, 2, 2]), fl.zeros([2, 3, 3, 3])), 'ERR_SHAPE');
  throwsCode(() => F.conv2d(fl.zeros([1, 3, 5, 5]), fl.zeros([2, 3, 3, 3]), fl.zeros([3])), 'ERR_SHAPE');
  throwsCode(() => F.conv2d(fl.zeros([1, 3, 5, 5]), fl.zeros([2, 3, 3, 3]), null, { stride: 0 }), 'ERR_ARG');
});

test.run();
