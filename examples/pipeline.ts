/**
 * The Fashion-MNIST CNN cut into two pipeline stages (conv blocks | classifier) on two devices,
 * each batch streamed through them as micro-batches with the 1F1B schedule. Prints the measured
 * bubble next to the theory each epoch.
 *   FLOCKML_CPU_DEVICES=2 npm run example:pipeline -- --epochs 1
 *   npm run example:pipeline -- --devices cuda:0,cuda:1 --micro-batches 8 --schedule gpipe
 * Options: --epochs N, --batch B (default 128), --limit N, --devices d0,d1, --micro-batches M
 * (default 4), --schedule gpipe|1f1b. Prints, as its last line, one JSON object with the accuracy.
 */
process.env.FLOCKML_CPU_DEVICES ??= '2';

import * as fl from '../lib';
import { cnn, deviceArgs, normalize, option, trainEpochs } from './common';

async function main(): Promise<void> {
  const { epochs, limit, batchSize, devices } = deviceArgs();
  const schedule = (option('schedule') ?? '1f1b') as 'gpipe' | '1f1b';
  fl.manualSeed(0);
  const layers = [...cnn().children()];
  const stages = [new fl.nn.Sequential(...layers.slice(0, 7)), new fl.nn.Sequential(...layers.slice(7))];
  const pipe = new fl.parallel.Pipeline(stages, { devices, microBatches: Number(option('micro-batches') ?? 4), schedule });
  const opt = new fl.optim.Adam(pipe.parameters(), { lr: 1e-3 });
  const train = fl.datasets.fashionMNIST({ split: 'train', limit });
  const loader = new fl.data.DataLoader(train, { batchSize, shuffle: true, seed: 0 });
  const step = async (x: fl.Tensor, y: fl.Tensor) => {
    const loss = await pipe.step(
      fl.tidy(() => normalize(x)),
      y,
      (out, t) => fl.nn.functional.crossEntropy(out, t),
    );
    fl.tidy(() => opt.step());
    opt.zeroGrad();
    return loss;
  };
  const postfix = () => {
    const st = pipe.stats()!;
    return { bubble: +st.bubble.toFixed(3), theory: +st.theory.toFixed(3) };
  };
  const { steps, msPerStep } = await trainEpochs(loader, epochs, step, { postfix });
  const test = fl.datasets.fashionMNIST({ split: 'test' });
  let correct = 0;
  for (const s of stages) s.eval();
  for (const [x, y] of new fl.data.DataLoader(test, { batchSize: 1000 })) {
    const hit = fl.noGrad(() =>
      fl.tidy(() =>
        stages[1]
          .forward(stages[0].forward(normalize(x).to(devices[0])).to(devices[1]))
          .argmax(1)
          .eq(y.to(devices[1]))
          .sum(),
      ),
    );
    correct += await hit.item();
    x.dispose();
    y.dispose();
  }
  const st = pipe.stats()!;
  console.log(
    JSON.stringify({
      example: 'pipeline',
      devices,
      schedule,
      micro_batches: pipe.microBatches,
      steps,
      ms_per_step: +msPerStep.toFixed(2),
      bubble: +st.bubble.toFixed(3),
      theory: +st.theory.toFixed(3),
      accuracy: correct / test.length,
    }),
  );
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
