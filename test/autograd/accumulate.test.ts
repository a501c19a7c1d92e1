import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib/index';
import { native } from '../../lib/native';
import { close, expectError } from '../helpers/reference';
import { values } from '../helpers/values';

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
  const g1 = values(first);
  x2.matmul(w).square().sum().backward();
  assert.is(w.grad, first, 'the stored gradient is added into, not replaced');
  const expected = refGrad(values(x1), values(w), 3, 8, 5).map((v, i) => v + refGrad(values(x2), values(w), 4, 8, 5)[i]);
  close(values(w.grad as fl.Tensor), expected, 1e-5, 1e-5);
  close(g1, refGrad(values(x1), values(w), 3, 8, 5), 1e-5, 1e-5, 'the first gradient');
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
    values(w.grad as fl.Tensor),
    values(
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
  assert.equal(values(w.grad as fl.Tensor), [12, 22, 32]);
  assert.equal(values(mine), [10, 20, 30], 'the storage the caller handed over is unchanged');
});

/** The weight gradient of `fwd` computed alone (a fresh .grad), as a host array. */
function alone(w: fl.Tensor, fwd: () => fl.Tensor): number[] {
  const saved = w.grad;
  w.grad = null;
  fl.tidy(() => fwd().backward());
  const g = values(w.grad as unknown as fl.Tensor);
  (w.grad as unknown as fl.Tensor).dispose();
  w.grad = saved;
  return g;
}

test("a linear layer's second backward adds its weight gradient into .grad in the GEMM: the bits of adding afterwards, no temporary", async () => {
  // [what, dtype, autocast, in, out]: the small one takes the GEMM's unpacked path for tiny products.
  const cases: [string, fl.DType, boolean, number, number][] = [
    ['f32', 'f32', false, 512, 256],
    ['f64', 'f64', false, 512, 256],
    ['autocast bf16', 'f32', true, 512, 256],
    ['f32 small', 'f32', false, 24, 10],
  ];
  for (const [what, dtype, autocast, nIn, nOut] of cases) {
    fl.manualSeed(3);
    const layer = new fl.nn.Linear(nIn, nOut).to(dtype);
    const x1 = fl.randn([16, nIn]).to(dtype);
    const x2 = fl.randn([16, nIn]).to(dtype);
    const run = (x: fl.Tensor) => () => {
      const f = () => layer.forward(x).relu().square().sum();
      return autocast ? fl.autocast({ device: 'cpu', dtype: 'bf16' }, f).to('f32') : f();
    };
    const g2 = alone(layer.weight, run(x2));
    fl.tidy(() => run(x1)().backward());
    const first = layer.weight.grad as fl.Tensor;
    const expected = values(first.add(fl.tensor(g2, { dtype }).reshape([nOut, nIn])));
    await fl.sync();
    const before = fl.memory().cpu.bytes;
    fl.resetPeakMemory();
    fl.tidy(() => run(x2)().backward());
    await fl.sync();
    assert.is(layer.weight.grad, first, `${what}: the same tensor`);
    assert.equal(values(first), expected, `${what}: bit for bit the stored gradient plus the new one`);
    const gradBytes = nOut * nIn * (dtype === 'f64' ? 8 : 4);
    const above = fl.memory().cpu.peakBytes - before;
    // Autocast adds in the GEMM's pass only where the GEMM rounds to bf16 itself (AVX512_BF16); the
    // f32-widening path makes the product and adds it afterwards, as the bits check above still holds.
    const inPass = !autocast || fl.buildInfo().bf16gemm === 'avx512_bf16';
    if (nIn > 100 && inPass)
      assert.ok(above < gradBytes / 4, `${what}: ${above} bytes above the state at the peak (a temporary gradient is ${gradBytes})`);
  }
});

test('where the GEMM cannot add in one pass (K over its slice, a hook, a second consumer) backward adds afterwards: the same sums', () => {
  fl.manualSeed(4);
  const w = fl.randn([64, 300]).requiresGrad_();
  const xs = [fl.randn([300, 64]), fl.randn([300, 64])];
  // K = 300 rows of x: the weight gradient's GEMM sums over more than one slice of K.
  const long = (x: fl.Tensor) => () => w.matmul(x).square().sum();
  const g2 = alone(w, long(xs[1]));
  fl.tidy(() => long(xs[0])().backward());
  const expected = values((w.grad as fl.Tensor).add(fl.tensor(g2).reshape([64, 300])));
  fl.tidy(() => long(xs[1])().backward());
  assert.equal(values(w.grad as fl.Tensor), expected, 'K over one slice');

  // A hook sees the new gradient alone, before it is accumulated.
  const v = fl.randn([16, 8]).requiresGrad_();
  const x = fl.randn([4, 16]);
  const seen: number[][] = [];
  v.registerHook((g) => {
    seen.push(values(g));
  });
  fl.tidy(() => x.matmul(v).sum().backward());
  fl.tidy(() => x.matmul(v).sum().backward());
  assert.equal(seen[1], seen[0], 'the hook saw the step gradient, not the sum');
  close(
    values(v.grad as fl.Tensor),
    seen[0].map((s) => 2 * s),
    0,
    0,
  );

  // Two consumers of one leaf: their gradients are summed first, then added.
  const u = fl.randn([16, 8]).requiresGrad_();
  const twice = () => x.matmul(u).sum().add(x.mul(2).matmul(u).sum());
  const gu = alone(u, twice);
  fl.tidy(() => twice().backward());
  fl.tidy(() => twice().backward());
  assert.equal(values(u.grad as fl.Tensor), values(fl.tensor(gu).add(fl.tensor(gu))));
});

test('native matmulInto re-validates its operands and refuses an out that shares their storage', () => {
  const a = fl.randn([4, 3]),
    b = fl.randn([3, 5]),
    out = fl.zeros([4, 5]);
  assert.ok(native.matmulInto(a.handle, b.handle, false, false, out.handle, null));
  close(values(out), values(a.matmul(b)), 0, 0);
  expectError(
    () => native.matmulInto(a.handle, b.handle, false, false, fl.zeros([5, 4]).handle, null),
    RangeError,
    'ERR_SHAPE',
    /\[4,5\] cannot be added into \[5,4\]/,
  );
  expectError(
    () => native.matmulInto(a.handle, b.handle, false, false, fl.zeros([4, 5], { dtype: 'f64' }).handle, null),
    TypeError,
    'ERR_DTYPE',
    /into f64/,
  );
  expectError(
    () => native.matmulInto(a.reshape([1, 4, 3]).handle, b.handle, false, false, out.handle, null),
    RangeError,
    'ERR_SHAPE',
    /2-D/,
  );
  expectError(
    () => native.matmulInto(a.handle, b.handle, false, false, out.handle, 'i32'),
    TypeError,
    'ERR_DTYPE',
    /compute dtype must be bf16 or f16, got i32/,
  );
  const square = fl.randn([4, 4]);
  const before = values(square);
  assert.is(native.matmulInto(square.handle, square.handle, false, false, square.handle, null), false, 'out is an operand');
  assert.equal(values(square), before);
});

test.run();
