/**
 * GPU conformance of fused attention: scaledDotProductAttention on cuda:0 against the CPU kernel
 * from the same inputs — plain, causal, bool and additive masks, dropout (the same Philox mask on
 * both devices), odd sizes and head sizes in each of the CUDA kernel's size classes — forward and
 * gradients, f32 and f64, plus bf16/f16 forward with f32 accumulation.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib/index';
import type { Tensor } from '../../lib/index';
import { gpuSuiteRuns } from './gpu_present';
import { close } from '../helpers/reference';
import { values } from '../helpers/values';

const F = fl.nn.functional;
const hasGpu = gpuSuiteRuns('GPU attention conformance');
const dev = 'cuda:0';

if (!hasGpu) {
  test('without a GPU, CUDA inputs to scaledDotProductAttention cannot be made', () => {
    assert.throws(
      () => fl.randn([1, 2, 3]).to(dev),
      (e: Error & { code?: string }) => e instanceof TypeError && e.code === 'ERR_DEVICE',
    );
  });
} else {
  const shapes: [string, number[], number[], number[]][] = [
    ['t=1', [1, 2, 1, 8], [1, 2, 1, 8], [1, 2, 1, 8]],
    ['t=7 d=5', [2, 3, 7, 5], [2, 3, 7, 5], [2, 3, 7, 5]],
    ['t=129 d=64', [1, 2, 129, 64], [1, 2, 129, 64], [1, 2, 129, 64]],
    ['cross tq=70 tk=200 d=100 dv=40', [2, 1, 70, 100], [2, 1, 200, 100], [2, 1, 200, 40]],
    ['d=256', [1, 1, 33, 256], [1, 1, 33, 256], [1, 1, 33, 256]],
  ];
  for (const dtype of ['f32', 'f64'] as const) {
    const [rtol, atol] = dtype === 'f64' ? [1e-10, 1e-11] : [2e-4, 2e-5];
    for (const [label, qs, ks, vs] of shapes) {
      for (const variant of ['plain', 'causal', 'bool mask', 'additive mask', 'dropout'] as const) {
        test(`${label} ${variant} (${dtype}) on ${dev} matches the CPU, forward and backward`, () => {
          const base = [qs, ks, vs].map((s) => fl.randn(s).to(dtype));
          const tq = qs[2];
          const tk = ks[2];
          const mask =
            variant === 'bool mask'
              ? fl.tensor(
                  Uint8Array.from({ length: tq * tk }, (_, e) => Number(e % tk === 0 || Math.sin(e) > -0.3)),
                  { dtype: 'bool', shape: [tq, tk] },
                )
              : variant === 'additive mask'
                ? fl.randn([qs[0], 1, tq, tk]).to(dtype)
                : null;
          const run = (xs: Tensor[], m: Tensor | null) => {
            fl.manualSeed(77);
            return F.scaledDotProductAttention(xs[0], xs[1], xs[2], {
              attnMask: m,
              isCausal: variant === 'causal',
              dropoutP: variant === 'dropout' ? 0.25 : 0,
            });
          };
          const cpuIn = base.map((t) => t.clone().requiresGrad_());
          const gpuIn = base.map((t) => t.to(dev).requiresGrad_());
          const yc = run(cpuIn, mask);
          const yg = run(gpuIn, mask?.to(dev) ?? null);
          close(values(yg), values(yc), rtol, atol, 'output');
          const gy = fl.randn([...yc.shape]).to(dtype);
          yc.mul(gy).sum().backward();
          yg.mul(gy.to(dev)).sum().backward();
          cpuIn.forEach((x, k) => close(values(gpuIn[k].grad as Tensor), values(x.grad as Tensor), rtol, atol, `grad[${k}]`));
        });
      }
    }
  }
  for (const dtype of ['bf16', 'f16'] as const) {
    test(`${dtype} forward on ${dev} agrees with the CPU (f32 accumulation on both)`, () => {
      const [q, k, v] = [0, 1, 2].map(() => fl.randn([2, 2, 65, 32]).to(dtype));
      const c = F.scaledDotProductAttention(q, k, v, { isCausal: true });
      const g = F.scaledDotProductAttention(q.to(dev), k.to(dev), v.to(dev), { isCausal: true });
      assert.is(g.dtype, dtype);
      close(values(g), values(c), 2e-2, 2e-2, dtype);
    });
  }
}

test.run();
