/**
 * Fashion-MNIST with a two-layer MLP on the CPU: Flatten → Linear(784,128) → ReLU → Linear(128,10),
 * Adam lr 1e-3, batch 100. Shows a progress bar (log lines off a terminal) and, last, one JSON line.
 *   npm run example:mlp -- --epochs 1
 */
import * as fl from '../lib';
import { evaluate, parseArgs, train } from './common';

async function main(): Promise<void> {
  const { epochs, limit } = parseArgs();
  fl.manualSeed(0);
  const { nn } = fl;
  const model = new nn.Sequential(new nn.Flatten(), new nn.Linear(784, 128), new nn.ReLU(), new nn.Linear(128, 10));
  const { steps, msPerStep } = await train(model, 100, epochs, limit);
  const acc = await evaluate(model);
  console.log(
    JSON.stringify({
      example: 'fashion-mnist-mlp',
      epochs,
      steps,
      test_acc: Number(acc.toFixed(4)),
      ms_per_step: Number(msPerStep.toFixed(3)),
      mfu: Number(fl.utils.mfu({ flopsPerStep: fl.utils.stepFlops(model, fl.zeros([100, 1, 28, 28])), stepMs: msPerStep }).toFixed(4)),
    }),
  );
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
