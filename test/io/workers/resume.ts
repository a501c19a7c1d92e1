/**
 * Trains a small MLP (dropout, Adam, StepLR, a shuffling DistributedSampler) on synthetic data.
 *   resume.ts full <dir> <N>     trains 2N steps, writes <dir>/final-full.safetensors
 *   resume.ts first <dir> <N>    trains N steps, saves a checkpoint to <dir>/ckpt
 *   resume.ts second <dir> <N>   a new process: loads <dir>/ckpt, trains to step 2N, writes <dir>/final-resumed.safetensors
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

  let step = 0;
  if (mode === 'second') step = (await fl.checkpoint.load(join(dir, 'ckpt'), { model, optimizer, scheduler, sampler })).step;
  const end = mode === 'first' ? n : 2 * n;

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
  model.train();
  while (step < end) {
    let batch: number[] = [];
    for (const i of sampler) {
      batch.push(i);
      if (batch.length < BATCH) continue;
      trainStep(batch);
      batch = [];
      if (++step === end) break;
    }
    if (step < end) sampler.setEpoch(sampler.epoch + 1);
  }
  if (mode === 'first') {
    await fl.checkpoint.save(join(dir, 'ckpt'), { model, optimizer, scheduler, sampler, step, extra: { note: 'resume test' } });
  } else {
    await fl.save(model.stateDict(), join(dir, mode === 'full' ? 'final-full.safetensors' : 'final-resumed.safetensors'));
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
