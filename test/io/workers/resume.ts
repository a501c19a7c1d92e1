/**
 * Trains a small MLP (dropout, Adam, StepLR, a shuffling DistributedSampler) on synthetic data.
 *   resume.ts full <dir> <N>     trains 2N steps, writes <dir>/final-full.safetensors
 *   resume.ts first <dir> <N>    trains steps 0 … N−1, saves a checkpoint of step N−1 to <dir>/ckpt
 *   resume.ts second <dir> <N>   a new process: loads <dir>/ckpt, trains from its nextStep to 2N, writes <dir>/final-resumed.safetensors
 * The loop is the README's ("Saving and resuming"): step counts from the loaded nextStep, and the
 * checkpoint saves the index of the step just run.
 */
import { join } from 'node:path';
import * as fl from '../../../lib';

const BATCH = 8;

async function main(): Promise<void> {
  const [mode, dir, nArg] = process.argv.slice(2);
  const n = Number(nArg);
  fl.manualSeed(0);
  const x = fl.randn([64, 10]);
  const y = fl.randint(0, 3, [64]);
  const model = new fl.nn.Sequential(new fl.nn.Linear(10, 32), new fl.nn.ReLU(), new fl.nn.Dropout(0.2), new fl.nn.Linear(32, 3));
  const optimizer = new fl.optim.Adam(model.parameters(), { lr: 0.01 });
  const scheduler = new fl.optim.StepLR(optimizer, 3, 0.5);
  const sampler = new fl.DistributedSampler(64, { numReplicas: 1, rank: 0, shuffle: true, seed: 7 });
  const lossFn = new fl.nn.CrossEntropyLoss();

  const start = mode === 'second' ? (await fl.checkpoint.load(join(dir, 'ckpt'), { model, optimizer, scheduler, sampler })).nextStep : 0;
  const total = 2 * n;

  const trainStep = (batch: number[]) => {
    fl.tidy(() => {
      const idx = fl.tensor(batch, { dtype: 'i64' });
      optimizer.zeroGrad();
      const loss = lossFn.forward(model.forward(x.indexSelect(0, idx)) as fl.Tensor, y.indexSelect(0, idx));
      loss.backward();
      optimizer.step();
      scheduler.step();
    });
  };
  // The batches of the sampler's order, epoch after epoch (64 samples: 8 whole batches each).
  function* batches(): Generator<number[]> {
    for (;;) {
      let batch: number[] = [];
      for (const i of sampler) {
        batch.push(i);
        if (batch.length < BATCH) continue;
        yield batch;
        batch = [];
      }
      sampler.setEpoch(sampler.epoch + 1);
    }
  }
  const next = batches();
  model.train();
  for (let step = start; step < total; step++) {
    trainStep(next.next().value as number[]);
    if (mode === 'first' && step === n - 1) {
      await fl.checkpoint.save(join(dir, 'ckpt'), { model, optimizer, scheduler, sampler, step, extra: { note: 'resume test' } });
      return;
    }
  }
  await fl.save(model.stateDict(), join(dir, mode === 'full' ? 'final-full.safetensors' : 'final-resumed.safetensors'));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
