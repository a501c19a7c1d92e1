import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib';
import { checkCase, fixtures, numericGradCheck, throwsCode, load, close } from '../fixtures/load';
import { close as closeValues } from '../helpers/reference';
import { values } from '../helpers/values';

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
  numericGradCheck(
    (x) =>
      F.conv2d(x, w, null, { stride: [1, 2], padding: 1 })
        .mul(r)
        .sum(),
    fl.randn([1, 3, 3, 4], { dtype: 'f64' }),
  );
  const x = fl.randn([2, 3, 3, 4], { dtype: 'f64' });
  const r2 = fl.randn([2, 2, 2, 2], { dtype: 'f64' });
  numericGradCheck(
    (wt) =>
      F.conv2d(x, wt, null, { stride: 2, padding: [0, 1] })
        .mul(r2)
        .sum(),
    w,
  );
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
  throwsCode(() => F.conv2d(fl.zeros([1, 3, 5, 5]), fl.zeros([2, 3, 3, 3]), null, { stride: 0 }), 'ERR_RANGE');
});

// Taps that fall wholly in the padding (padding beyond the kernel's reach, large dilation) leave
// whole column ranges empty: forward and input gradient against a direct f64 sum.
for (const [stride, padding, dilation, k] of [
  [1, 3, 1, 2],
  [2, 2, 3, 3],
  [3, 1, 2, 2],
  [1, 0, 4, 2],
]) {
  test(`conv2d stride ${stride} padding ${padding} dilation ${dilation} matches a direct sum`, () => {
    fl.manualSeed(stride * 100 + padding * 10 + dilation);
    const [n, c, h, w, oc] = [2, 3, 5, 6, 2];
    const x = fl.randn([n, c, h, w], { dtype: 'f64' }).requiresGrad_(),
      wt = fl.randn([oc, c, k, k], { dtype: 'f64' });
    const y = F.conv2d(x, wt, null, { stride, padding, dilation });
    const oh = Math.floor((h + 2 * padding - dilation * (k - 1) - 1) / stride) + 1,
      ow = Math.floor((w + 2 * padding - dilation * (k - 1) - 1) / stride) + 1;
    assert.equal([...y.shape], [n, oc, oh, ow]);
    const xv = x.dataSync() as Float64Array,
      wv = wt.dataSync() as Float64Array,
      yv = y.dataSync() as Float64Array;
    const gy = fl.randn([n, oc, oh, ow], { dtype: 'f64' }),
      gyv = gy.dataSync() as Float64Array;
    const gx = new Float64Array(xv.length);
    for (let b = 0; b < n; b++)
      for (let o = 0; o < oc; o++)
        for (let oy = 0; oy < oh; oy++)
          for (let ox = 0; ox < ow; ox++) {
            let acc = 0;
            const yi = ((b * oc + o) * oh + oy) * ow + ox;
            for (let ci = 0; ci < c; ci++)
              for (let i = 0; i < k; i++)
                for (let j = 0; j < k; j++) {
                  const iy = oy * stride - padding + i * dilation,
                    ix = ox * stride - padding + j * dilation;
                  if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
                  const xi = ((b * c + ci) * h + iy) * w + ix,
                    wi = ((o * c + ci) * k + i) * k + j;
                  acc += xv[xi] * wv[wi];
                  gx[xi] += gyv[yi] * wv[wi];
                }
            assert.ok(Math.abs(yv[yi] - acc) < 1e-12, `y[${yi}] ${yv[yi]} vs ${acc}`);
          }
    y.backward(gy);
    const got = x.grad!.dataSync() as Float64Array;
    gx.forEach((v, i) => assert.ok(Math.abs(got[i] - v) < 1e-12, `gx[${i}] ${got[i]} vs ${v}`));
  });
}

test('conv2d over a batch too large for one column matrix equals image-by-image results', () => {
  // 576 x 9604 f32 columns per image (22 MB) exceed the CPU kernel's 32 MB chunk for two images,
  // so the batch runs as two chunks and the weight gradient is summed across them.
  fl.manualSeed(31);
  const x = fl.randn([2, 64, 100, 100]).requiresGrad_(),
    w = fl.randn([8, 64, 3, 3]).mul(0.05).requiresGrad_(),
    b = fl.randn([8]).requiresGrad_();
  const gy = fl.randn([2, 8, 98, 98]);
  const y = F.conv2d(x, w, b);
  y.backward(gy);
  const parts = [0, 1].map((i) => {
    const xi = x.detach().narrow(0, i, 1).contiguous().requiresGrad_(),
      wi = w.detach().clone().requiresGrad_();
    const yi = F.conv2d(xi, wi, b.detach());
    yi.backward(gy.narrow(0, i, 1).contiguous());
    return { y: yi, gx: xi.grad!, gw: wi.grad! };
  });
  closeValues(values(y), values(fl.cat([parts[0].y, parts[1].y], 0)), 5e-5, 5e-5, 'output', false);
  closeValues(values(x.grad!), values(fl.cat([parts[0].gx, parts[1].gx], 0)), 5e-5, 5e-5, 'input grad', false);
  closeValues(values(w.grad!), values(parts[0].gw.add(parts[1].gw)), 5e-5, 5e-5, 'weight grad', false);
});

for (const mode of ['reflect', 'replicate', 'circular'] as const)
  test(`Conv2d paddingMode '${mode}' matches PyTorch forward and backward`, () => {
    const c = fixtures[`conv2d_padding_${mode}`];
    const conv = new fl.nn.Conv2d(3, 4, [3, 2], { stride: [1, 2], padding: [2, 1], paddingMode: mode, dtype: 'f64' });
    fl.noGrad(() => {
      conv.weight.copy_(load(c.inputs.w));
      (conv.bias as fl.nn.Parameter).copy_(load(c.inputs.b));
    });
    const x = load(c.inputs.x, 'f64', true);
    const y = conv.forward(x);
    close(y, c.output, 1e-9, 'output');
    y.mul(load(c.gy)).sum().backward();
    close(x.grad as fl.Tensor, c.grads.x, 1e-9, 'grad x');
    close(conv.weight.grad as fl.Tensor, c.grads.w, 1e-9, 'grad w');
    close((conv.bias as fl.nn.Parameter).grad as fl.Tensor, c.grads.b, 1e-9, 'grad b');
  });

test('Conv2d paddingMode: checked at construction; reflect needs padding below the input size', () => {
  throwsCode(() => new fl.nn.Conv2d(1, 1, 3, { paddingMode: 'mirror' as never }), 'ERR_ARG');
  throwsCode(() => new fl.nn.ConvTranspose2d(1, 1, 3, { paddingMode: 'reflect' }), 'ERR_ARG');
  throwsCode(() => new fl.nn.Conv2d(1, 1, 3, { paddingMod: 'reflect' } as never), 'ERR_ARG');
  throwsCode(() => new fl.nn.Conv2d(1, 1, 3, { stride: 'x' as never }), 'ERR_ARG');
  throwsCode(() => new fl.nn.Conv2d(1, 1, 3, { dtype: 'i64' }), 'ERR_DTYPE');
  const c = new fl.nn.Conv2d(1, 1, 3, { padding: 2, paddingMode: 'reflect' });
  throwsCode(() => c.forward(fl.zeros([1, 1, 2, 5])), 'ERR_SHAPE');
  assert.equal([...c.forward(fl.zeros([1, 1, 3, 5])).shape], [1, 1, 5, 7]);
});

test.run();
