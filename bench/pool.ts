/**
 * CPU max pooling 2×2 stride 2 (cpp/cpu/pool.cc), f32 against bf16 in the same process, alternating
 * round by round: forward (values and argmax indices) and backward (the gradient scattered to the
 * argmax) on the Fashion-MNIST CNN's two pooling inputs (batch 64). One JSON line per shape and
 * pass: the medians (ms per call) and the bf16/f32 ratio.
 *   npm run bench -- pool [--rounds R] [--iters N]
 */
import * as fl from '../lib';
import { median } from './anchors/serve';
import { numberFlag } from './shared/args';

const rounds = numberFlag('rounds', 5),
  iters = numberFlag('iters', 50);
const F = fl.nn.functional;
const shapes = [
  [64, 32, 26, 26],
  [64, 64, 11, 11],
];
const dtypes = ['f32', 'bf16'] as const;

async function time(once: () => void): Promise<number> {
  once();
  await fl.sync();
  const t0 = performance.now();
  for (let i = 0; i < iters; i++) once();
  await fl.sync();
  return (performance.now() - t0) / iters;
}

async function main(): Promise<void> {
  const times: Record<string, number[]> = {};
  const inputs = shapes.map((s) => dtypes.map((d) => fl.randn(s).to(d).requiresGrad_()));
  for (let r = 0; r < rounds; r++)
    for (const [si, shape] of shapes.entries())
      for (const [di, dtype] of dtypes.entries()) {
        const x = inputs[si][di];
        const key = (pass: string) => `${shape.join('x')} ${pass} ${dtype}`;
        (times[key('forward')] ??= []).push(await time(() => fl.noGrad(() => fl.tidy(() => void F.maxPool2d(x, 2)))));
        const y = F.maxPool2d(x, 2);
        const gy = fl.randn([...y.shape]).to(dtype);
        (times[key('backward')] ??= []).push(
          await time(() => {
            y.backward(gy, { retainGraph: true });
            x.grad?.dispose();
            x.grad = null;
          }),
        );
        y.dispose();
        gy.dispose();
      }
  for (const shape of shapes)
    for (const pass of ['forward', 'backward']) {
      const ms = (dtype: string) => median(times[`${shape.join('x')} ${pass} ${dtype}`]);
      console.log(
        JSON.stringify({
          bench: 'max-pool-2x2',
          shape,
          pass,
          isa: fl.buildInfo().cpuIsa,
          threads: fl.getNumThreads(),
          rounds,
          f32_ms: +ms('f32').toFixed(4),
          bf16_ms: +ms('bf16').toFixed(4),
          bf16_over_f32: +(ms('bf16') / ms('f32')).toFixed(3),
        }),
      );
    }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
