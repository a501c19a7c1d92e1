/**
 * One rank of a two-rank DDP run (ring backend) on synthetic data: a small MLP with dropout, Adam,
 * StepLR and a shuffling DistributedSampler, so every piece of state a resume needs is exercised.
 *   ddp_resume.ts full <dir> <N>     trains 2N steps; rank 0 writes <dir>/final-full.safetensors
 *   ddp_resume.ts first <dir> <N>    trains N steps, then fl.checkpoint.save(<dir>/ckpt)
 *   ddp_resume.ts second <dir> <N>   new processes: fl.checkpoint.load(<dir>/ckpt), train to 2N;
 *                                    rank 0 writes <dir>/final-resumed.safetensors
 * Every rank prints `writes=<n>`: the file-system mutations it made through node:fs/promises and
 * the native tensor writer during the checkpoint save (only rank 0 may make any).
 */
import fsp from 'node:fs/promises';
import { join } from 'node:path';
import * as fl from '../../../lib';
import { native } from '../../../lib/native';
import { destroyProcessGroup, initProcessGroup } from '../../../lib/distributed/index';
import { DistributedDataParallel } from '../../../lib/parallel/ddp';

const BATCH = 4; // per rank

/** Counts calls to the functions that create, change or remove files, until `stop()`. */
function countWrites(): { count: () => number; stop: () => void } {
  let n = 0;
  const restore: Array<() => void> = [];
  const wrap = <T extends object>(obj: T, names: string[]) => {
    for (const name of names) {
      const target = obj as Record<string, unknown>;
      const orig = target[name] as (...a: unknown[]) => unknown;
      target[name] = (...a: unknown[]) => {
        n++;
        return orig.apply(obj, a);
      };
      restore.push(() => (target[name] = orig));
    }
  };
  wrap(fsp, ['mkdir', 'open', 'rename', 'rm', 'writeFile', 'unlink', 'rmdir', 'copyFile', 'appendFile']);
  wrap(native, ['ioSave', 'ioSaveSync']);
  return { count: () => n, stop: () => restore.forEach((r) => r()) };
}

async function main(): Promise<void> {
  const [mode, dir, nArg] = process.argv.slice(2);
  const n = Number(nArg);
  const pg = await initProcessGroup({ backend: 'ring', timeoutMs: 30_000 });
  fl.manualSeed(0); // the same on every rank: data, initial weights and dropout masks agree
  const x = fl.randn([64, 10]);
  const y = fl.randint(0, 3, [64]);
  const model = new fl.nn.Sequential(new fl.nn.Linear(10, 32), new fl.nn.ReLU(), new fl.nn.Dropout(0.2), new fl.nn.Linear(32, 3));
  const ddp = await DistributedDataParallel.create(model, (t: fl.Tensor) => model.forward(t) as fl.Tensor);
  const optimizer = new fl.optim.Adam(model.parameters(), { lr: 0.01 });
  const scheduler = new fl.optim.StepLR(optimizer, 3, 0.5);
  const sampler = new fl.DistributedSampler(64, { shuffle: true, seed: 7 }); // numReplicas and rank from the group
  const lossFn = new fl.nn.CrossEntropyLoss();

  let step = 0;
  if (mode === 'second') step = (await fl.checkpoint.load(join(dir, 'ckpt'), { model, optimizer, scheduler, sampler })).step;
  const end = mode === 'first' ? n : 2 * n;

  model.train();
  while (step < end) {
    let batch: number[] = [];
    for (const i of sampler) {
      batch.push(i);
      if (batch.length < BATCH) continue;
      const idx = fl.tensor(batch, { dtype: 'i64' });
      fl.tidy(() => {
        optimizer.zeroGrad();
        lossFn.forward(ddp.forward(x.indexSelect(0, idx)), y.indexSelect(0, idx)).backward();
      });
      idx.dispose();
      await ddp.syncGradients();
      fl.tidy(() => {
        optimizer.step();
        scheduler.step();
      });
      batch = [];
      if (++step === end) break;
    }
    if (step < end) sampler.setEpoch(sampler.epoch + 1);
  }
  if (mode === 'first') {
    const writes = countWrites();
    await fl.checkpoint.save(join(dir, 'ckpt'), { model, optimizer, scheduler, sampler, step });
    writes.stop();
    console.log(`rank=${pg.rank} writes=${writes.count()}`);
  } else if (pg.rank === 0) {
    await fl.save(model.stateDict(), join(dir, mode === 'full' ? 'final-full.safetensors' : 'final-resumed.safetensors'));
  }
  await destroyProcessGroup();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
