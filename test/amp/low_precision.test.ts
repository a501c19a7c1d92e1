import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib';
import { values } from '../helpers/values';

const F = fl.nn.functional;

/**
 * bf16/f16 inputs of the conv, pooling, loss and norm kernels are widened to f32, computed, and
 * rounded once: the result must equal the f32 op on the same (rounded) values, rounded — forward
 * and backward, bit for bit.
 */
const cases: Record<string, { shapes: number[][]; fn: (xs: fl.Tensor[]) => fl.Tensor }> = {
  conv2d: { shapes: [[2, 3, 7, 7], [4, 3, 3, 3], [4]], fn: ([x, w, b]) => F.conv2d(x, w, b, { padding: 1, stride: 2 }) },
  maxPool2d: { shapes: [[2, 3, 6, 6]], fn: ([x]) => F.maxPool2d(x, 2) },
  avgPool2d: { shapes: [[2, 3, 6, 6]], fn: ([x]) => F.avgPool2d(x, 3, { stride: 1, padding: 1 }) },
  adaptiveAvgPool2d: { shapes: [[2, 3, 7, 5]], fn: ([x]) => F.adaptiveAvgPool2d(x, [3, 2]) },
  crossEntropy: {
    shapes: [[6, 5]],
    fn: ([x]) => F.crossEntropy(x, fl.tensor([0, 4, 2, 1, 3, 0], { dtype: 'i64' }), { reduction: 'none', labelSmoothing: 0.1 }),
  },
  layerNorm: { shapes: [[4, 12]], fn: ([x]) => F.layerNorm(x, [12]) },
};

for (const dtype of ['bf16', 'f16'] as const)
  for (const [name, c] of Object.entries(cases)) {
    test(`${name} on ${dtype}: f32 inside, one rounding (forward and backward)`, () => {
      fl.manualSeed(21);
      const vals = c.shapes.map((s) => fl.randn(s).to(dtype));
      const lo = vals.map((v) => v.clone().requiresGrad_());
      const hi = vals.map((v) => v.to('f32').requiresGrad_());
      const yLo = c.fn(lo),
        yHi = c.fn(hi);
      assert.is(yLo.dtype, dtype);
      assert.equal(values(yLo), values(yHi.to(dtype)), 'forward');
      const gy = fl.randn([...yLo.shape]).to(dtype);
      yLo.backward(gy);
      yHi.backward(gy.to('f32'));
      lo.forEach((t, i) => {
        assert.is(t.grad?.dtype, dtype);
        const a = (t.grad as fl.Tensor).to('f32'),
          b = (hi[i].grad as fl.Tensor).to(dtype).to('f32');
        // Backward may round once more between kernels (a gradient passed on in the input's dtype).
        const worst = a.sub(b).abs().max().itemSync();
        const scale = b.abs().max().itemSync();
        assert.ok(worst <= scale * (dtype === 'bf16' ? 2 ** -7 : 2 ** -10), `grad ${i}: ${worst} vs scale ${scale}`);
      });
    });
  }

test('mixed dtypes: element-wise ops promote as PyTorch (bf16 with f16 gives f32); matmul and linear refuse', () => {
  const b = fl.ones([2]).to('bf16'),
    h = fl.ones([2]).to('f16'),
    f = fl.ones([2]),
    d = fl.ones([2], { dtype: 'f64' });
  assert.is(fl.add(b, h).dtype, 'f32');
  assert.is(fl.mul(b, f).dtype, 'f32');
  assert.is(fl.sub(h, d).dtype, 'f64');
  assert.is(fl.add(b, 1.5).dtype, 'bf16');
  for (const [x, y] of [
    [fl.ones([2, 2], { dtype: 'f64' }), fl.ones([2, 2])],
    [fl.ones([2, 2]).to('bf16'), fl.ones([2, 2])],
  ])
    assert.throws(
      () => fl.matmul(x, y),
      (e: { code?: string }) => e.code === 'ERR_DTYPE',
    );
  assert.throws(
    () => F.linear(fl.ones([2, 2]).to('bf16'), fl.ones([3, 2])),
    (e: { code?: string }) => e.code === 'ERR_DTYPE',
  );
});

test.run();
