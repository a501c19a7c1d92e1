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
import { cnn, deviceArgs, evaluate, normalize, trainEpochs } from './common';

async function main(): Promise<void> {
  const { epochs, limit, batchSize, devices } = deviceArgs();
  fl.manualSeed(0);
  const model = cnn();
  const dp = await fl.parallel.DataParallel.create(model, { devices, bucketCapMB: 0.25 });
  const opt = dp.optimizer(fl.optim.Adam, { lr: 1e-3 });
  const train = fl.datasets.fashionMNIST({ split: 'train', limit });
  const loader = new fl.data.DataLoader(train, { batchSize, shuffle: true, seed: 0 });
  model.train();
  const { steps, msPerStep } = await trainEpochs(loader, epochs, async (x, y) => {
    const loss = fl.tidy(() => {
      const l = fl.nn.functional.crossEntropy(dp.forward(normalize(x)), y.to(dp.outputDevice));
      l.backward();
      return l;
    });
    await dp.step(); // waits for the gradient sums, steps every replica's optimizer
    opt.zeroGrad();
    return loss;
  });
  const accuracy = await evaluate(model); // replica 0 is the model itself
  console.log(JSON.stringify({ example: 'mirrored-fashion-mnist', devices, epochs, steps, ms_per_step: +msPerStep.toFixed(2), accuracy }));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
