import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib';
import { native } from '../../lib/native';
import { numericGradCheck, throwsCode } from '../fixtures/load';
import { close, raw } from '../helpers/reference';
import { values } from '../helpers/values';

const F = fl.nn.functional;

/** f64 reference of layer norm over the last `k` dims and of its gradients for an upstream grad `gy`. */
function reference(x: number[], shape: number[], k: number, w: number[] | null, b: number[] | null, gy: number[], eps: number) {
  const d = shape.slice(shape.length - k).reduce((p, q) => p * q, 1);
  const rows = x.length / Math.max(d, 1);
  const y = new Array<number>(x.length),
    gx = new Array<number>(x.length);
  const gw = new Array<number>(d).fill(0),
    gb = new Array<number>(d).fill(0);
  for (let r = 0; r < rows; r++) {
    const row = x.slice(r * d, (r + 1) * d);
    const m = row.reduce((s, v) => s + v, 0) / d;
    const rs = 1 / Math.sqrt(row.reduce((s, v) => s + (v - m) ** 2, 0) / d + eps);
    const xh = row.map((v) => (v - m) * rs);
    const g = xh.map((_, i) => gy[r * d + i] * (w ? w[i] : 1));
    const mg = g.reduce((s, v) => s + v, 0) / d;
    const mgx = g.reduce((s, v, i) => s + v * xh[i], 0) / d;
    for (let i = 0; i < d; i++) {
      y[r * d + i] = xh[i] * (w ? w[i] : 1) + (b ? b[i] : 0);
      gx[r * d + i] = rs * (g[i] - mg - xh[i] * mgx);
      gw[i] += gy[r * d + i] * xh[i];
      gb[i] += gy[r * d + i];
    }
  }
  return { y, gx, gw, gb };
}

const cases: { shape: number[]; k: number; affine: 'none' | 'weight' | 'both' }[] = [
  { shape: [3, 5], k: 1, affine: 'both' },
  { shape: [3, 5], k: 1, affine: 'none' },
  { shape: [2, 3, 7], k: 2, affine: 'both' },
  { shape: [2, 3, 7], k: 2, affine: 'weight' },
  { shape: [127, 3], k: 1, affine: 'both' }, // more rows than the CPU's partial-sum chunks
  { shape: [1, 1025], k: 1, affine: 'both' },
  { shape: [5, 2, 1, 3], k: 3, affine: 'both' },
  { shape: [4, 1], k: 1, affine: 'both' }, // d = 1: x̂ is 0, y is the bias
];

for (const dtype of ['f64', 'f32'] as const) {
  for (const c of cases) {
    test(`layerNorm ${dtype} ${c.shape.join('x')} over ${c.k} dims, affine ${c.affine}: forward and all gradients`, () => {
      fl.manualSeed(c.shape.reduce((p, q) => p * q, c.k));
      const tail = c.shape.slice(c.shape.length - c.k);
      const x = fl.randn(c.shape, { dtype: 'f64' }).mul(3).add(1);
      const w = c.affine !== 'none' ? fl.randn(tail, { dtype: 'f64' }) : null;
      const b = c.affine === 'both' ? fl.randn(tail, { dtype: 'f64' }) : null;
      const gy = fl.randn(c.shape, { dtype: 'f64' });
      const ref = reference(values(x), c.shape, c.k, w && values(w), b && values(b), values(gy), 1e-5);
      const xs = x.to(dtype).requiresGrad_();
      const ws = w?.to(dtype).requiresGrad_() ?? null;
      const bs = b?.to(dtype).requiresGrad_() ?? null;
      const y = F.layerNorm(xs, tail, ws, bs);
      const tol = dtype === 'f64' ? 1e-10 : 2e-5;
      close(values(y), ref.y, tol, tol, 'y');
      y.backward(gy.to(dtype));
      const gxTol = dtype === 'f64' ? 1e-9 : 1e-4,
        gTol = dtype === 'f64' ? 1e-10 : 1e-4;
      close(values(xs.grad!), ref.gx, gxTol, gxTol, 'dx');
      if (ws) close(values(ws.grad!), ref.gw, gTol, gTol, 'dweight');
      if (bs) close(values(bs.grad!), ref.gb, gTol, gTol, 'dbias');
    });
  }
}

test('layerNorm gradients pass a numerical check in f64 for input, weight and bias', () => {
  fl.manualSeed(4);
  const x = fl.randn([3, 2, 5], { dtype: 'f64' });
  const w = fl.randn([2, 5], { dtype: 'f64' });
  const b = fl.randn([2, 5], { dtype: 'f64' });
  const r = fl.randn([3, 2, 5], { dtype: 'f64' });
  numericGradCheck((t) => F.layerNorm(t, [2, 5], w, b).mul(r).sum(), x);
  numericGradCheck((t) => F.layerNorm(x, [2, 5], t, b).mul(r).sum(), w);
  numericGradCheck((t) => F.layerNorm(x, [2, 5], w, t).mul(r).sum(), b);
});

test('layerNorm only computes the parameter gradients that are needed, and zero rows give zero ones', () => {
  const w = fl.ones([4], { dtype: 'f64' }).requiresGrad_();
  const b = fl.zeros([4], { dtype: 'f64' });
  const x = fl.randn([3, 4], { dtype: 'f64' }).requiresGrad_();
  F.layerNorm(x, [4], w, b).sum().backward();
  assert.ok(w.grad);
  assert.is(b.grad, null);
  const empty = fl.zeros([0, 4], { dtype: 'f64' }).requiresGrad_();
  const we = fl.ones([4], { dtype: 'f64' }).requiresGrad_();
  const be = fl.zeros([4], { dtype: 'f64' }).requiresGrad_();
  F.layerNorm(empty, [4], we, be).sum().backward();
  close(values(we.grad!), [0, 0, 0, 0], 0, 0, 'dweight of no rows');
  close(values(be.grad!), [0, 0, 0, 0], 0, 0, 'dbias of no rows');
});

test('LayerNorm module with and without elementwise affine matches the functional form', () => {
  fl.manualSeed(2);
  const x = fl.randn([2, 3, 4]);
  const ln = new fl.nn.LayerNorm([3, 4]);
  fl.noGrad(() => {
    ln.weight?.copy_(fl.randn([3, 4]));
    ln.bias?.copy_(fl.randn([3, 4]));
  });
  close(values(ln.forward(x)), values(F.layerNorm(x, [3, 4], ln.weight, ln.bias)), 0, 0, 'affine', false);
  const plain = new fl.nn.LayerNorm([4], { elementwiseAffine: false });
  close(values(plain.forward(x)), values(F.layerNorm(x, [4])), 0, 0, 'no affine', false);
});

test('layerNorm with parameters of another dtype composes; bad shapes and eps are refused', () => {
  // Parameters of another floating dtype take the composed path and still give the right values.
  const x = fl.randn([2, 3], { dtype: 'f64' });
  const y = F.layerNorm(x, [3], fl.ones([3], { dtype: 'f32' }), fl.zeros([3], { dtype: 'f32' }));
  close(values(y), values(F.layerNorm(x, [3])), 1e-6, 1e-6, 'mixed dtypes', false);
  throwsCode(() => F.layerNorm(x, [3], fl.ones([2])), 'ERR_SHAPE');
  throwsCode(() => F.layerNorm(x, [3], null, fl.ones([3, 1])), 'ERR_SHAPE');
  throwsCode(() => F.layerNorm(x, [3], null, null, -1), 'ERR_RANGE');
});

test('the native layer_norm entry points re-validate what they receive', () => {
  const x = raw(native.full([2, 3], 'f64', 'cpu', 1));
  const stat = raw(native.full([2], 'f64', 'cpu', 1));
  throwsCode(() => native.layerNorm(x, raw(native.full([4], 'f64', 'cpu', 1)), null, 1e-5), 'ERR_SHAPE');
  throwsCode(() => native.layerNorm(x, null, raw(native.full([3], 'f32', 'cpu', 1)), 1e-5), 'ERR_DTYPE');
  throwsCode(() => native.layerNorm(x, null, null, -1), 'ERR_RANGE');
  throwsCode(() => native.layerNormBackward(x, stat, stat, null, x, true, false), 'ERR_ARG');
  throwsCode(() => native.layerNormBackward(x, stat, raw(native.full([3], 'f64', 'cpu', 1)), null, x, false, false), 'ERR_SHAPE');
  const [gx, gw, gb] = native.layerNormBackward(x, stat, stat, null, x, false, true);
  assert.ok(gx);
  assert.is(gw, null);
  assert.ok(gb);
});

test.run();
