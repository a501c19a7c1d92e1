/**
 * The Fashion-MNIST CNN trained mirrored (DataParallel): one process, one replica per device, each
 * batch split across them, gradients summed by bucketed in-process allreduces during backward,
 * every replica stepping its own Adam so they stay identical.
 *   FLOCKML_CPU_DEVICES=2 npm run example:mirrored -- --epochs 1           (cpu:0, cpu:1)
 *   npm run example:mirrored -- --devices cuda:0,cuda:1 --epochs 1
 * Options: --epochs N, --batch B (total, default 128), --limit N, --devices d0,d1,...
 * Prints, as its last line, one JSON object with the test accuracy.
 */
process.env.FLOCKML_CPU_DEVICES ??= '2';

import * as fl from '../lib';
import { cnn, evaluate, normalize, parseArgs } from './common';

function option(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

async function main(): Promise<void> {
  const { epochs, limit } = parseArgs();
  const batchSize = Number(option('batch') ?? 128);
  const devices = (option('devices') ?? 'cpu:0,cpu:1').split(',');
  fl.manualSeed(0);
  const model = cnn();
  const dp = await fl.parallel.DataParallel.create(model, { devices, bucketCapMB: 0.25 });
  const opt = dp.optimizer(fl.optim.Adam, { lr: 1e-3 });
  const train = fl.datasets.fashionMNIST({ split: 'train', limit });
  const loader = new fl.data.DataLoader(train, { batchSize, shuffle: true, seed: 0 });
  let steps = 0;
  const started = performance.now();
  model.train();
  for (let e = 0; e < epochs; e++) {
    const bar = fl.utils.progress(loader, { desc: `epoch ${e + 1}/${epochs}` });
    for await (const [x, y] of bar) {
      const loss = fl.tidy(() => {
        const l = fl.nn.functional.crossEntropy(dp.forward(normalize(x)), y.to(dp.outputDevice));
        l.backward();
        return l;
      });
      await dp.step(); // waits for the gradient sums, steps every replica's optimizer
      opt.zeroGrad();
      steps++;
      if (steps % 50 === 0) bar.setPostfix({ loss: await loss.item() });
      loss.dispose();
      x.dispose();
      y.dispose();
    }
  }
  await fl.sync();
  const msPerStep = (performance.now() - started) / steps;
  const accuracy = await evaluate(model); // replica 0 is the model itself
  console.log(JSON.stringify({ example: 'mirrored-fashion-mnist', devices, epochs, steps, ms_per_step: +msPerStep.toFixed(2), accuracy }));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
