/**
 * Fashion-MNIST with a small CNN on the CPU: Conv2d(1,32,3) → ReLU → MaxPool2d(2) → Conv2d(32,64,3)
 * → ReLU → MaxPool2d(2) → Flatten → Linear(1600,128) → ReLU → Linear(128,10), Adam lr 1e-3, batch 64.
 *   npm run example:cnn -- --epochs 1
 */
import * as fl from '../lib';
import { cnn, evaluate, parseArgs, train } from './common';

async function main(): Promise<void> {
  const { epochs, limit } = parseArgs();
  fl.manualSeed(0);
  const model = cnn();
  const { steps, msPerStep } = await train(model, 64, epochs, limit);
  const acc = await evaluate(model);
  console.log(
    JSON.stringify({
      example: 'fashion-mnist-cnn',
      epochs,
      steps,
      test_acc: Number(acc.toFixed(4)),
      ms_per_step: Number(msPerStep.toFixed(3)),
      mfu: Number(fl.utils.mfu({ flopsPerStep: fl.utils.stepFlops(model, fl.zeros([64, 1, 28, 28])), stepMs: msPerStep }).toFixed(4)),
    }),
  );
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
