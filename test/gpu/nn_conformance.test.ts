/**
 * GPU behaviour of the nn kernels beyond their op cases (test/ops/harness/ runs those on CUDA):
 * multi-tensor optimizer launches over more tensors than one launch takes and over mixed dtypes,
 * and a kernel's error surfacing at the next sync point. Without a CUDA device this file checks
 * only that CUDA tensors are refused cleanly, and says so in one line.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib/index';
import type { Tensor } from '../../lib/index';
import { gpuSuiteRuns } from './gpu_present';
import { close } from '../helpers/reference';
import { values } from '../helpers/values';

const F = fl.nn.functional;
const hasGpu = gpuSuiteRuns('GPU nn conformance');
const dev = 'cuda:0';
type Float = 'f32' | 'f64';

// f32 tolerances allow for sums taken in a different order (GEMM tiles, tree reductions).
const TOL: Record<Float, [number, number]> = { f64: [1e-10, 1e-11], f32: [2e-4, 2e-5] };

if (!hasGpu) {
  test('without a GPU, CUDA tensors for the nn ops are refused with ERR_DEVICE', () => {
    assert.throws(
      () => fl.randn([1, 1, 3, 3]).to(dev),
      (e: Error & { code?: string }) => e instanceof TypeError && e.code === 'ERR_DEVICE',
    );
  });
} else {
  fl.manualSeed(123);
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
        const [rtol, atol] = dt === 'f32' ? [1e-5, 1e-6] : TOL.f64;
        for (let step = 1; step <= 3; step++) {
          cpu.forEach((p, k) => {
            const g = fl.randn(sizes[k]).to(dt);
            p.grad = g;
            gpu[k].grad = g.to(dev);
          });
          oc.step();
          og.step();
          cpu.forEach((p, k) => close(values(gpu[k]), values(p), rtol, atol, `${name} step ${step} param ${k}`));
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
    cpu.forEach((p, k) => {
      const [rtol, atol] = p.dtype === 'f32' ? [1e-5, 1e-6] : TOL.f64;
      close(values(gpu[k]), values(p), rtol, atol, `mixed param ${k}`);
    });
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
