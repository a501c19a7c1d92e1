/**
 * Training-step time of the Fashion-MNIST MLP (batch 100) and CNN (batch 64) on the CPU, the models
 * of examples/, with the PyTorch anchor (bench/anchors/torch_fashion_mnist.py, 2 threads) run in
 * the same command when /usr/bin/python3 has torch. Prints one JSON line per measurement.
 * Each figure is the median of `rounds` timed rounds of `steps` steps (ms_min: the fastest round);
 * mfu is the step's matmul/conv FLOPs (fl.utils.stepFlops) per second over the CPU's measured f32 GEMM rate.
 *   npm run bench -- fashion-mnist [--steps N] [--rounds R] [--no-anchor]
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import * as fl from '../lib';
import { cnn } from '../examples/common';

const argv = process.argv.slice(2);
const stepsArg = argv.indexOf('--steps');
const steps = stepsArg >= 0 ? Number(argv[stepsArg + 1]) : 100;
const roundsArg = argv.indexOf('--rounds');
const rounds = roundsArg >= 0 ? Number(argv[roundsArg + 1]) : 5;
const { nn } = fl;

function mlp(): fl.nn.Module & { forward(x: fl.Tensor): fl.Tensor } {
  return new nn.Sequential(new nn.Flatten(), new nn.Linear(784, 128), new nn.ReLU(), new nn.Linear(128, 10));
}

/** Median and minimum of `rounds` timed rounds of `steps` steps each, after a warm-up. */
async function measure(name: string, model: fl.nn.Module & { forward(x: fl.Tensor): fl.Tensor }, batch: number): Promise<void> {
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
  const times: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const t0 = performance.now();
    for (let i = 10; i < steps + 10; i++) step(batches[i]);
    await fl.sync();
    times.push((performance.now() - t0) / steps);
  }
  times.sort((a, b) => a - b);
  const median = times[Math.floor(times.length / 2)];
  const flops = fl.utils.stepFlops(model, batches[0][0]); // 2·M·N·K per Linear/Conv2d forward, ×3 for the step
  console.log(
    JSON.stringify({
      bench: name,
      device: 'cpu',
      impl: 'flockml',
      threads: fl.getNumThreads(),
      batch,
      steps,
      rounds,
      ms_per_step: Number(median.toFixed(3)),
      ms_min: Number(times[0].toFixed(3)),
      gflops_per_step: Number((flops / 1e9).toFixed(4)),
      mfu: Number(fl.utils.mfu({ flopsPerStep: flops, stepMs: median }).toFixed(4)), // against this machine's f32 GEMM
    }),
  );
}

async function main(): Promise<void> {
  fl.manualSeed(0);
  await measure('fashion-mnist-mlp', mlp(), 100);
  await measure('fashion-mnist-cnn', cnn(), 64);
  if (argv.includes('--no-anchor')) return;
  const anchor = spawnSync(
    '/usr/bin/python3',
    [join(__dirname, 'anchors', 'torch_fashion_mnist.py'), '--steps', String(steps), '--rounds', String(rounds)],
    { encoding: 'utf8' },
  );
  if (anchor.status === 0) process.stdout.write(anchor.stdout);
  else
    console.log(
      JSON.stringify({
        bench: 'fashion-mnist',
        impl: 'torch',
        skipped: (anchor.stderr || anchor.error?.message || '').trim().split('\n').pop(),
      }),
    );
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
