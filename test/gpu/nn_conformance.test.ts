/**
 * GPU conformance of the nn kernel families (conv2d, pooling, fused cross-entropy, row norm, fused
 * optimizer steps): each op runs on cuda:0 and on the CPU from the same inputs, and the outputs and
 * the gradients autograd produces must agree, in f32 and f64, on odd sizes. Without a CUDA device
 * this file checks only that CUDA tensors are refused cleanly, and says so in one line.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib/index';
import type { Tensor } from '../../lib/index';
import { gpuSuiteRuns } from './gpu_present';

const F = fl.nn.functional;
const hasGpu = gpuSuiteRuns('GPU nn conformance');
const dev = 'cuda:0';
type Float = 'f32' | 'f64';

// f32 tolerances allow for sums taken in a different order (GEMM tiles, tree reductions).
const TOL: Record<Float, [number, number]> = { f64: [1e-10, 1e-11], f32: [2e-4, 2e-5] };

function values(t: Tensor): number[] {
  return Array.from(t.to('cpu').dataSync() as ArrayLike<number | bigint>, Number);
}

function near(what: string, got: number[], want: number[], [rtol, atol]: [number, number]): void {
  assert.is(got.length, want.length, `${what}: length`);
  for (let i = 0; i < want.length; i++) {
    const ok =
      got[i] === want[i] ||
      Math.abs(got[i] - want[i]) <= atol + rtol * Math.abs(want[i]) ||
      (Number.isNaN(got[i]) && Number.isNaN(want[i]));
    if (!ok) assert.unreachable(`${what}[${i}]: gpu ${got[i]} vs cpu ${want[i]}`);
  }
}

/** Small deterministic integers in [0, n), independent of the tensor RNG. */
function ints(count: number, n: number, seed: number): number[] {
  let s = seed >>> 0;
  return Array.from({ length: count }, () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s % n;
  });
}

/**
 * Runs `f` on CPU and cuda:0 copies of `make()`'s float inputs (each requiring grad), weights the
 * output with one random tensor, and compares the outputs and every input's gradient.
 */
function checkGrad(
  name: string,
  f: (xs: Tensor[]) => Tensor,
  make: () => Tensor[],
  dtype: Float,
  tol: [number, number] = TOL[dtype],
): void {
  test(`${name} (${dtype}) on ${dev} matches the CPU, forward and backward`, () => {
    const base = make().map((t) => t.to(dtype));
    const cpuIn = base.map((t) => t.clone().requiresGrad_());
    const gpuIn = base.map((t) => t.to(dev).requiresGrad_());
    const yc = f(cpuIn);
    const yg = f(gpuIn);
    assert.equal([...yg.shape], [...yc.shape], `${name}: output shape`);
    near(`${name} output`, values(yg), values(yc), tol);
    const gy = fl.randn([...yc.shape]).to(dtype);
    yc.mul(gy).sum().backward();
    yg.mul(gy.to(dev)).sum().backward();
    cpuIn.forEach((x, k) => {
      assert.ok(x.grad && gpuIn[k].grad, `${name}: gradient of input ${k} missing`);
      near(`${name} grad[${k}]`, values(gpuIn[k].grad as Tensor), values(x.grad as Tensor), tol);
    });
  });
}

if (!hasGpu) {
  test('without a GPU, CUDA tensors for the nn ops are refused with ERR_DEVICE', () => {
    assert.throws(
      () => fl.randn([1, 1, 3, 3]).to(dev),
      (e: Error & { code?: string }) => e instanceof TypeError && e.code === 'ERR_DEVICE',
    );
  });
} else {
  fl.manualSeed(123);
  const randn =
    (...shape: number[]) =>
    () => [fl.randn(shape)];
  for (const dt of ['f32', 'f64'] as const) {
    // conv2d: bias, stride, padding, dilation, groups (incl. depthwise), tiles wider than 64 rows
    // and a long batch reduction that the weight gradient splits over blocks.
    const convs: [string, number[], number[], fl.nn.functional.Conv2dOptions, boolean][] = [
      ['3x3 pad 1', [2, 3, 7, 9], [4, 3, 3, 3], { padding: 1 }, true],
      ['stride 2, padding [1,2], dilation [2,1]', [3, 4, 11, 10], [6, 4, 3, 2], { stride: 2, padding: [1, 2], dilation: [2, 1] }, true],
      ['groups 2, stride [2,1], dilation 2', [2, 4, 9, 8], [6, 2, 3, 3], { groups: 2, stride: [2, 1], padding: 1, dilation: 2 }, false],
      ['depthwise', [1, 5, 13, 7], [5, 1, 3, 3], { groups: 5, padding: 1 }, true],
      ['1x1, 130 output channels', [2, 70, 5, 5], [130, 70, 1, 1], {}, true],
      ['5x5 over a batch of 8', [8, 3, 32, 32], [8, 3, 5, 5], { stride: 1 }, true],
      ['stride 3 larger than the kernel', [2, 2, 10, 11], [3, 2, 2, 2], { stride: 3, padding: 1 }, false],
    ];
    for (const [what, xs, ws, opts, bias] of convs) {
      checkGrad(
        `conv2d ${what}`,
        ([x, w, b]) => F.conv2d(x, w, b ?? null, opts),
        () => [fl.randn(xs), fl.randn(ws).mul(0.3), ...(bias ? [fl.randn([ws[0]])] : [])],
        dt,
        dt === 'f32' ? [1e-3, 1e-4] : TOL.f64,
      );
    }
    checkGrad(
      'convTranspose2d stride 2, outputPadding 1',
      ([x, w, b]) => F.convTranspose2d(x, w, b, { stride: 2, padding: 1, outputPadding: 1 }),
      () => [fl.randn([2, 4, 5, 6]), fl.randn([4, 3, 3, 3]), fl.randn([3])],
      dt,
      dt === 'f32' ? [1e-3, 1e-4] : TOL.f64,
    );

    // Pooling: padding, dilation, ceil mode, ties (small integers), overlapping windows.
    checkGrad('maxPool2d 3/2 pad 1', ([x]) => F.maxPool2d(x, 3, { stride: 2, padding: 1 }), randn(2, 3, 9, 11), dt);
    checkGrad(
      'maxPool2d dilation, ceil mode',
      ([x]) => F.maxPool2d(x, [3, 2], { stride: [2, 1], dilation: [2, 1], ceilMode: true }),
      randn(1, 2, 10, 7),
      dt,
    );
    checkGrad(
      'maxPool2d ties, overlapping windows',
      ([x]) => F.maxPool2d(x, 3, { stride: 1, padding: 1 }),
      () => [fl.randint(0, 3, [2, 2, 6, 7]).to('f32')],
      dt,
    );
    test(`maxPool2d indices (${dt}) on ${dev} equal the CPU's`, () => {
      const x = fl.randint(0, 4, [2, 3, 7, 9]).to(dt);
      const opts = { stride: 2, padding: 1, ceilMode: true };
      assert.equal(values(F.maxPool2dWithIndices(x.to(dev), 3, opts)[1]), values(F.maxPool2dWithIndices(x, 3, opts)[1]));
    });
    for (const countIncludePad of [true, false]) {
      checkGrad(
        `avgPool2d 3/2 pad 1 countIncludePad=${countIncludePad}`,
        ([x]) => F.avgPool2d(x, 3, { stride: 2, padding: 1, countIncludePad }),
        randn(2, 3, 9, 8),
        dt,
      );
      checkGrad(
        `avgPool2d ceil mode countIncludePad=${countIncludePad}`,
        ([x]) => F.avgPool2d(x, [2, 3], { stride: [2, 2], padding: [1, 1], ceilMode: true, countIncludePad }),
        randn(1, 2, 8, 9),
        dt,
      );
    }
    checkGrad('adaptiveAvgPool2d 10x7 -> 3x4', ([x]) => F.adaptiveAvgPool2d(x, [3, 4]), randn(2, 3, 10, 7), dt);
    checkGrad('adaptiveAvgPool2d 3x2 -> 5x4 (overlapping bins)', ([x]) => F.adaptiveAvgPool2d(x, [5, 4]), randn(1, 2, 3, 2), dt);
    checkGrad('adaptiveAvgPool2d global', ([x]) => F.adaptiveAvgPool2d(x, 1), randn(2, 5, 7, 9), dt);

    // Cross-entropy: warp rows and block rows, ignored targets, label smoothing, i32 targets.
    const ce: [string, number[], number, fl.nn.functional.CrossEntropyOptions, 'i64' | 'i32'][] = [
      ['9x13 mean', [9, 13], 1, {}, 'i64'],
      ['9x13 ignoreIndex 3, smoothing 0.1', [9, 13], 2, { ignoreIndex: 3, labelSmoothing: 0.1 }, 'i64'],
      ['1025x10 sum, ignoreIndex -100', [1025, 10], 3, { reduction: 'sum' }, 'i32'],
      ['3x3001 none, smoothing 0.2', [3, 3001], 4, { reduction: 'none', labelSmoothing: 0.2 }, 'i64'],
      ['2x5x7 spatial, smoothing 0.05', [2, 5, 7], 5, { labelSmoothing: 0.05, ignoreIndex: 0 }, 'i64'],
    ];
    for (const [what, shape, seed, opts, tdt] of ce) {
      const classes = shape[1];
      const tshape = [shape[0], ...shape.slice(2)];
      const count = tshape.reduce((a, b) => a * b, 1);
      // Every fifth target is -100 (ignored by default) so rows of both kinds meet.
      const data = ints(count, classes, seed)
        .map((v, i) => (i % 5 === 4 ? -100 : v))
        .map((v) => (v === -100 && opts.ignoreIndex !== undefined ? opts.ignoreIndex : v));
      const target = fl.tensor(data, { dtype: tdt }).reshape(tshape);
      checkGrad(
        `crossEntropy ${what}`,
        ([x]) => F.crossEntropy(x, x.device === 'cpu' ? target : target.to(dev), opts),
        () => [fl.randn(shape).mul(3)],
        dt,
      );
    }

    // Row norm through layerNorm (warp rows, block rows, several trailing dims) and groupNorm.
    checkGrad(
      'layerNorm [7,33] affine',
      ([x, w, b]) => F.layerNorm(x, [33], w, b),
      () => [fl.randn([7, 33]), fl.randn([33]), fl.randn([33])],
      dt,
    );
    checkGrad(
      'layerNorm [3,2050]',
      ([x]) => F.layerNorm(x, [2050]),
      () => [fl.randn([3, 2050]).mul(4).add(10)],
      dt,
    );
    checkGrad('layerNorm [4,3,5] over [3,5]', ([x]) => F.layerNorm(x, [3, 5]), randn(4, 3, 5), dt);
    checkGrad(
      'groupNorm [2,6,5,7] in 3 groups',
      ([x, w, b]) => F.groupNorm(x, 3, w, b),
      () => [fl.randn([2, 6, 5, 7]), fl.randn([6]), fl.randn([6])],
      dt,
    );
    checkGrad('groupNorm [2,4,33,35] in 1 group', ([x]) => F.groupNorm(x, 1), randn(2, 4, 33, 35), dt);
  }

  // Optimizers: odd sizes, one tensor spanning several blocks, and more tensors than one launch takes.
  const sizes = [[3], [17, 5], [1025], [1], [64, 65], [9000], ...Array.from({ length: 50 }, (_, i) => [i + 2])];
  type MakeOpt = (ps: fl.nn.Parameter[]) => fl.optim.Optimizer<{ lr: number }>;
  const optimizers: [string, MakeOpt][] = [
    ['Adam', (ps) => new fl.optim.Adam(ps, { lr: 0.01 })],
    ['Adam with weight decay', (ps) => new fl.optim.Adam(ps, { lr: 0.01, betas: [0.8, 0.9], eps: 1e-6, weightDecay: 0.1 })],
    ['AdamW', (ps) => new fl.optim.AdamW(ps, { lr: 0.01, weightDecay: 0.1 })],
    ['SGD', (ps) => new fl.optim.SGD(ps, { lr: 0.1 })],
    ['SGD momentum, dampening, weight decay', (ps) => new fl.optim.SGD(ps, { lr: 0.1, momentum: 0.9, dampening: 0.1, weightDecay: 0.01 })],
    ['SGD Nesterov', (ps) => new fl.optim.SGD(ps, { lr: 0.1, momentum: 0.9, nesterov: true })],
  ];
  for (const dt of ['f32', 'f64'] as const) {
    for (const [name, make] of optimizers) {
      test(`${name} (${dt}) on ${dev}: one and several steps over ${sizes.length} params match the CPU`, () => {
        const init = sizes.map((s) => fl.randn(s).to(dt));
        const cpu = init.map((t) => new fl.nn.Parameter(t.clone()));
        const gpu = init.map((t) => new fl.nn.Parameter(t.to(dev)));
        const oc = make(cpu),
          og = make(gpu);
        for (let step = 1; step <= 3; step++) {
          cpu.forEach((p, k) => {
            const g = fl.randn(sizes[k]).to(dt);
            p.grad = g;
            gpu[k].grad = g.to(dev);
          });
          oc.step();
          og.step();
          cpu.forEach((p, k) => near(`${name} step ${step} param ${k}`, values(gpu[k]), values(p), dt === 'f32' ? [1e-5, 1e-6] : TOL.f64));
        }
      });
    }
  }
  test(`Adam on ${dev} with f32 and f64 params in one group matches the CPU`, () => {
    const init = [fl.randn([7]), fl.randn([5, 3]).to('f64'), fl.randn([4097])];
    const cpu = init.map((t) => new fl.nn.Parameter(t.clone()));
    const gpu = init.map((t) => new fl.nn.Parameter(t.to(dev)));
    const oc = new fl.optim.AdamW(cpu, { lr: 0.05 }),
      og = new fl.optim.AdamW(gpu, { lr: 0.05 });
    for (let step = 0; step < 2; step++) {
      cpu.forEach((p, k) => {
        p.grad = fl.randn([...p.shape]).to(p.dtype);
        gpu[k].grad = (p.grad as Tensor).to(dev);
      });
      oc.step();
      og.step();
    }
    cpu.forEach((p, k) => near(`mixed param ${k}`, values(gpu[k]), values(p), p.dtype === 'f32' ? [1e-5, 1e-6] : TOL.f64));
  });

  test('crossEntropy on the GPU rejects an out-of-range target at the next sync point', async () => {
    const loss = F.crossEntropy(fl.randn([3, 4]).to(dev), fl.tensor([0, 7, 1], { dtype: 'i64' }).to(dev), { reduction: 'none' });
    try {
      await loss.data();
      assert.unreachable('should reject');
    } catch (e) {
      assert.instance(e, RangeError);
      assert.is((e as { code?: string }).code, 'ERR_INDEX');
      assert.match((e as Error).message, /crossEntropy.* 7 /);
    }
    assert.is(fl.ones([4], { device: dev }).sum().to('cpu').itemSync(), 4);
  });
}

test.run();
