/**
 * Training-step time of the Fashion-MNIST MLP (batch 100) and CNN (batch 64) on the CPU, the models
 * of examples/, side by side with PyTorch (bench/anchors/torch_fashion_mnist.py, 2 threads) in the
 * same command: flockml and PyTorch alternate round by round (each round `steps` steps), so both
 * see the same machine. One JSON line per round per model with both times and their ratio, then a
 * summary line per model with both medians over the rounds and the ratio of the medians
 * (flockml's time over PyTorch's; < 1 is faster).
 * mfu is the step's matmul/conv FLOPs (fl.utils.stepFlops) per second over the CPU's measured f32 GEMM rate.
 *   npm run bench -- fashion-mnist [--steps N] [--rounds R] [--no-anchor] [--openblas DIR]
 */
import { join } from 'node:path';
import * as fl from '../lib';
import { cnn } from '../examples/common';
import { Anchor, median } from './anchors/serve';
import { numberFlag } from './shared/args';

const argv = process.argv.slice(2);
const steps = numberFlag('steps', 100);
const rounds = numberFlag('rounds', 5);
const { nn } = fl;
type Model = fl.nn.Module & { forward(x: fl.Tensor): fl.Tensor };

function mlp(): Model {
  return new nn.Sequential(new nn.Flatten(), new nn.Linear(784, 128), new nn.ReLU(), new nn.Linear(128, 10));
}

/** A model's training steps on its own batches, warmed up once; round() times `steps` of them. */
async function runner(model: Model, batch: number) {
  const ds = fl.datasets.fashionMNIST({ split: 'train', limit: batch * (steps + 10) });
  const batches = [...new fl.data.DataLoader(ds, { batchSize: batch })] as fl.Tensor[][];
  const opt = new fl.optim.Adam(model.parameters(), { lr: 1e-3 });
  const step = ([x, y]: fl.Tensor[]) =>
    fl.tidy(() => {
      const loss = fl.nn.functional.crossEntropy(model.forward(x), y);
      opt.zeroGrad();
      loss.backward();
      opt.step();
    });
  for (let i = 0; i < 10; i++) step(batches[i]); // warm-up: allocations, thread pool, page faults
  await fl.sync();
  return {
    flops: fl.utils.stepFlops(model, batches[0][0]), // 2·M·N·K per Linear/Conv2d forward, ×3 for the step
    async round(): Promise<number> {
      const t0 = performance.now();
      for (let i = 10; i < steps + 10; i++) step(batches[i]);
      await fl.sync();
      return (performance.now() - t0) / steps;
    },
  };
}

async function main(): Promise<void> {
  fl.manualSeed(0);
  let anchor: Anchor | null = null;
  let torchInfo: Record<string, unknown> = {};
  if (!argv.includes('--no-anchor')) {
    const started = await Anchor.start(join(__dirname, 'anchors', 'torch_fashion_mnist.py'), ['--steps', String(steps)]);
    if ('skipped' in started) console.log(JSON.stringify({ bench: 'fashion-mnist', impl: 'torch', skipped: started.skipped }));
    else {
      anchor = started.anchor;
      const { torch, threads, blas } = started.ready;
      torchInfo = { torch, torch_threads: threads, blas };
    }
  }
  const isa = fl.buildInfo().sgemm;
  for (const [name, model, batch] of [
    ['mlp', mlp(), 100],
    ['cnn', cnn(), 64],
  ] as const) {
    const bench = `fashion-mnist-${name}`;
    const run = await runner(model, batch);
    const ours: number[] = [],
      theirs: number[] = [];
    for (let r = 0; r < rounds; r++) {
      const ms = await run.round();
      ours.push(ms);
      const line = anchor && (await anchor.request(name));
      if (anchor && !line) {
        console.log(JSON.stringify({ bench, impl: 'torch', skipped: anchor.lastError() }));
        anchor = null;
      }
      const torchMs = line ? Number(line.ms_per_step) : undefined;
      if (torchMs !== undefined) theirs.push(torchMs);
      console.log(
        JSON.stringify({
          bench,
          round: r,
          ms_per_step: +ms.toFixed(3),
          ...(torchMs === undefined ? {} : { torch_ms_per_step: +torchMs.toFixed(3), ratio: +(ms / torchMs).toFixed(3) }),
        }),
      );
    }
    const ms = median(ours),
      torchMs = theirs.length ? median(theirs) : undefined;
    console.log(
      JSON.stringify({
        bench,
        device: 'cpu',
        impl: 'flockml',
        isa,
        threads: fl.getNumThreads(),
        batch,
        steps,
        rounds,
        ms_per_step: +ms.toFixed(3),
        ms_min: +Math.min(...ours).toFixed(3),
        gflops_per_step: +(run.flops / 1e9).toFixed(4),
        mfu: +fl.utils.mfu({ flopsPerStep: run.flops, stepMs: ms }).toFixed(4), // against this machine's f32 GEMM
        ...(torchMs === undefined
          ? {}
          : {
              ...torchInfo,
              torch_ms_per_step: +torchMs.toFixed(3),
              torch_ms_min: +Math.min(...theirs).toFixed(3),
              ratio: +(ms / torchMs).toFixed(3),
            }),
      }),
    );
  }
  anchor?.close();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
