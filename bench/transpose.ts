/**
 * CPU transposes of the last two dims (cpp/cpu/copy.cc, transpose_copy): `x.transpose(-2, -1)`,
 * which flockml materializes as a copy, next to PyTorch's `x.transpose(-2, -1).contiguous()`
 * (bench/anchors/torch_transpose.py) in the same command, alternating round by round. One JSON line
 * per shape and dtype: the medians (µs per call) and their ratio (flockml's over PyTorch's).
 *   npm run bench -- transpose [--rounds R] [--iters N] [--no-anchor]
 */
import { join } from 'node:path';
import * as fl from '../lib';
import { Anchor, median } from './anchors/serve';
import { numberFlag } from './shared/args';

const rounds = numberFlag('rounds', 7),
  iters = numberFlag('iters', 100);
const shapes = [
  [128, 784],
  [784, 128],
  [1024, 1024],
  [8, 64, 256],
];
const dtypes = ['f32', 'bf16', 'f64', 'u8'] as const;

async function time(x: fl.Tensor): Promise<number> {
  fl.tidy(() => void x.transpose(-2, -1));
  await fl.sync();
  const t0 = performance.now();
  for (let i = 0; i < iters; i++) x.transpose(-2, -1).dispose();
  await fl.sync();
  return ((performance.now() - t0) * 1000) / iters;
}

async function main(): Promise<void> {
  const started = process.argv.includes('--no-anchor')
    ? { skipped: '--no-anchor' }
    : await Anchor.start(join(__dirname, 'anchors', 'torch_transpose.py'), ['--iters', String(iters)]);
  const anchor = 'anchor' in started ? started.anchor : null;
  const ours: Record<string, number[]> = {};
  const theirs: Record<string, number[]> = {};
  const inputs = new Map<string, fl.Tensor>();
  for (let r = 0; r < rounds; r++)
    for (const shape of shapes)
      for (const dtype of dtypes) {
        const key = `${shape.join('x')} ${dtype}`;
        let x = inputs.get(key);
        if (!x) inputs.set(key, (x = fl.rand(shape).mul(100).to(dtype)));
        (ours[key] ??= []).push(await time(x));
        const answer = anchor ? await anchor.request(key) : null;
        if (answer) (theirs[key] ??= []).push(answer.us_per_call as number);
      }
  anchor?.close();
  for (const key of Object.keys(ours)) {
    const [shape, dtype] = key.split(' ');
    const us = median(ours[key]);
    const torchUs = theirs[key] ? median(theirs[key]) : null;
    console.log(
      JSON.stringify({
        bench: 'transpose',
        shape: shape.split('x').map(Number),
        dtype,
        threads: fl.getNumThreads(),
        rounds,
        us_per_call: +us.toFixed(2),
        ...(torchUs === null
          ? { torch: 'skipped' in started ? started.skipped : 'no answer' }
          : { torch_us_per_call: +torchUs.toFixed(2), ratio: +(us / torchUs).toFixed(3) }),
      }),
    );
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
