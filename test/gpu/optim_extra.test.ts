/**
 * GPU conformance of the fused RMSprop and Adagrad steps: cuda:0 against the CPU kernels, with more
 * tensors than one launch's table and a tensor spanning several chunks, in f32, f64 and through the
 * f32 masters of bf16/f16 params. Skips with one line without a CUDA device.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib/index';
import { gpuSuiteRuns } from './gpu_present';

const dev = 'cuda:0';

type Make = (ps: fl.Tensor[]) => fl.optim.Optimizer<{ lr: number }>;
const MAKERS: Array<[string, Make]> = [
  ['RMSprop', (ps) => new fl.optim.RMSprop(ps, { lr: 0.01 })],
  [
    'RMSprop centered, momentum, weight decay, maximize',
    (ps) => new fl.optim.RMSprop(ps, { lr: 0.01, centered: true, momentum: 0.9, weightDecay: 0.1, maximize: true }),
  ],
  ['Adagrad', (ps) => new fl.optim.Adagrad(ps, { lr: 0.1, lrDecay: 0.2, initialAccumulatorValue: 0.1, weightDecay: 0.01 })],
];

/** Three steps over 50 params (more than one launch's 48) of which one has 9000 elements (three chunks); the params after, as f64. */
function train(device: string, dtype: fl.DType, make: Make): number[][] {
  const sizes = [9000, ...Array.from({ length: 49 }, (_, i) => 1 + (i % 7))];
  const t = (n: number, f: (i: number) => number) =>
    fl
      .tensor(
        Float64Array.from({ length: n }, (_, i) => f(i)),
        { shape: [n] },
      )
      .to(dtype)
      .to(device);
  const ps = sizes.map((n, k) => new fl.nn.Parameter(t(n, (i) => Math.sin(i + k))));
  const opt = make(ps);
  for (let s = 0; s < 3; s++) {
    ps.forEach((p, k) => (p.grad = t(p.numel(), (i) => Math.cos(i * 0.7 + k + s))));
    opt.step();
  }
  return ps.map((p) => Array.from(p.to('cpu').to('f64').dataSync() as Float64Array));
}

if (!gpuSuiteRuns('GPU RMSprop and Adagrad')) {
  test('without a GPU, CUDA params are refused with ERR_DEVICE', () => {
    assert.throws(
      () => fl.zeros([2], { device: dev }),
      (e: Error & { code?: string }) => e.code === 'ERR_DEVICE',
    );
  });
} else {
  for (const dtype of ['f32', 'f64', 'bf16', 'f16'] as const)
    for (const [name, make] of MAKERS)
      test(`${name} (${dtype}) on ${dev} matches the CPU`, () => {
        // nvcc may fuse multiply-adds the CPU rounds twice; bf16/f16 params are the rounded f32 masters.
        const tol = { f32: 1e-5, f64: 1e-12, bf16: 1e-2, f16: 2e-3 }[dtype];
        const want = train('cpu', dtype, make);
        const got = train(dev, dtype, make);
        want.forEach((w, k) =>
          w.forEach((v, i) => {
            if (!(Math.abs(got[k][i] - v) <= tol * Math.max(1, Math.abs(v)))) assert.unreachable(`param ${k}[${i}]: ${got[k][i]} vs ${v}`);
          }),
        );
      });
}

test.run();
