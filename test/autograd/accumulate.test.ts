import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib/index';
import { arr, close } from '../helpers/reference';

/** d/dw of sum((x·w)²) for x [n, k], w [k, m], in f64 on the host. */
function refGrad(x: number[], w: number[], n: number, k: number, m: number): number[] {
  const y = new Array(n * m).fill(0);
  for (let i = 0; i < n; i++) for (let j = 0; j < m; j++) for (let t = 0; t < k; t++) y[i * m + j] += x[i * k + t] * w[t * m + j];
  const g = new Array(k * m).fill(0);
  for (let t = 0; t < k; t++) for (let j = 0; j < m; j++) for (let i = 0; i < n; i++) g[t * m + j] += 2 * x[i * k + t] * y[i * m + j];
  return g;
}

test('a second backward adds into the .grad the engine stored, in place: same tensor, the sum of both', () => {
  fl.manualSeed(0);
  const w = fl.randn([8, 5]).requiresGrad_();
  const x1 = fl.randn([3, 8]);
  const x2 = fl.randn([4, 8]);
  x1.matmul(w).square().sum().backward();
  const first = w.grad as fl.Tensor;
  const g1 = arr(first);
  x2.matmul(w).square().sum().backward();
  assert.is(w.grad, first, 'the stored gradient is added into, not replaced');
  const expected = refGrad(arr(x1), arr(w), 3, 8, 5).map((v, i) => v + refGrad(arr(x2), arr(w), 4, 8, 5)[i]);
  close(arr(w.grad as fl.Tensor), expected, 1e-5, 1e-5);
  close(g1, refGrad(arr(x1), arr(w), 3, 8, 5), 1e-5, 1e-5, 'the first gradient');
});

test('accumulating into a stored gradient allocates no second gradient-sized tensor', async () => {
  fl.manualSeed(1);
  const w = fl.randn([512, 512]).requiresGrad_();
  const x = fl.randn([1, 512]);
  const gradBytes = 512 * 512 * 4;
  fl.tidy(() => x.matmul(w).sum().backward());
  await fl.sync();
  const before = fl.memory().cpu.bytes;
  fl.resetPeakMemory();
  fl.tidy(() => x.matmul(w).sum().backward());
  await fl.sync();
  // The product's gradient (one [512, 512] temporary) and a few small tensors; adding it out of
  // place would hold a new gradient beside the old one as well.
  const above = fl.memory().cpu.peakBytes - before;
  assert.ok(above < 1.5 * gradBytes, `${above} bytes above the state at the peak`);
  close(
    arr(w.grad as fl.Tensor),
    arr(
      x
        .transpose(0, 1)
        .matmul(fl.ones([1, 512]))
        .mul(2),
    ),
    1e-6,
    1e-6,
  );
});

test('a .grad the caller assigned is never written in place: backward replaces it with the sum', () => {
  const w = fl.tensor([1, 2, 3]).requiresGrad_();
  const mine = fl.tensor([10, 20, 30]);
  const view = mine.reshape([3]); // shares mine's storage
  w.grad = view;
  w.mul(2).sum().backward();
  assert.is.not(w.grad, view);
  assert.equal(arr(w.grad as fl.Tensor), [12, 22, 32]);
  assert.equal(arr(mine), [10, 20, 30], 'the storage the caller handed over is unchanged');
});

test.run();
