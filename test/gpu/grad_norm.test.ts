/**
 * GPU conformance of the fused gradient norm and clipping (cuda:0 against the CPU, several tensors
 * per launch including more than one launch's table). Skips with one line without a CUDA device.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib/index';
import { gpuSuiteRuns } from './gpu_present';

const dev = 'cuda:0';

if (!gpuSuiteRuns('GPU gradient norm')) {
  test('without a GPU, clipping CUDA gradients is refused with ERR_DEVICE', () => {
    assert.throws(
      () => fl.zeros([2], { device: dev }),
      (e: Error & { code?: string }) => e.code === 'ERR_DEVICE',
    );
  });
} else {
  for (const dtype of ['f32', 'f64', 'bf16'] as const) {
    for (const p of [2, 1, 3, Infinity]) {
      test(`gradNorm and clipGradNorm_ (${dtype}, p=${p}) on ${dev} match the CPU`, () => {
        fl.manualSeed(21);
        // 60 tensors: two launches' worth of table entries; sizes cross the per-block chunk.
        const sizes = Array.from({ length: 60 }, (_, i) => [1, 3, 127, 1025, 16385, 40000][i % 6]);
        const cpu = sizes.map((n) => Object.assign(new fl.nn.Parameter(fl.zeros([n], { dtype })), { grad: fl.randn([n]).to(dtype) }));
        const gpu = cpu.map((q) =>
          Object.assign(new fl.nn.Parameter(fl.zeros([q.numel()], { dtype, device: dev })), { grad: q.grad!.to(dev) }),
        );
        const tol = dtype === 'f64' ? 1e-12 : dtype === 'f32' ? 1e-5 : 1e-2;
        const want = fl.optim.gradNorm(cpu, p).to('f64').itemSync(),
          got = fl.optim.gradNorm(gpu, p).to('f64').itemSync();
        assert.ok(Math.abs(got - want) <= tol * want, `norm ${got} vs ${want}`);
        fl.optim.clipGradNorm_(cpu, want / 3, p);
        fl.optim.clipGradNorm_(gpu, want / 3, p);
        cpu.forEach((q, k) => {
          const a = q.grad!.to('f64').dataSync() as Float64Array,
            b = gpu[k].grad!.to('cpu').to('f64').dataSync() as Float64Array;
          for (let i = 0; i < a.length; i++)
            if (!(Math.abs(a[i] - b[i]) <= tol * Math.max(1, Math.abs(a[i])))) assert.unreachable(`grad ${k}[${i}]: ${b[i]} vs ${a[i]}`);
        });
      });
    }
  }
}

test.run();
