/**
 * The Fashion-MNIST CNN trained with ZeRO across processes: `--stage 1` shards Adam's state
 * (DDP's allreduced gradients, each rank stepping its block), `--stage 2` shards the gradients
 * too (bucket reduce-scatters during backward), `--stage 3` shards the parameters as well
 * (DDP `zeroStage: 3`, each layer of the Sequential a unit gathered around its forward and
 * backward). The training loop is DDP's at every stage, with ZeroRedundancyOptimizer(ddp, Adam). Start it with the launcher:
 *   npx flockml launch --nproc-per-node 2 examples/zero_fashion_mnist.ts --stage 3 --epochs 1
 * Options: --stage 1|2|3 (default 2), --epochs N, --batch B (per rank, default 64), --limit N.
 * Rank 0 prints, as its last line, one JSON object with the test accuracy and its memory.
 */
import * as fl from '../lib';
import { cnn, evaluate, normalize, parseArgs, trainEpochs } from './common';

function flag(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}

async function main(): Promise<void> {
  const { epochs, limit } = parseArgs();
  const stage = flag('stage', 2);
  const batchSize = flag('batch', 64);
  if (![1, 2, 3].includes(stage)) throw new Error(`--stage must be 1, 2 or 3, got ${stage}`);
  const pg = await fl.distributed.initProcessGroup({ backend: 'ring' });
  fl.manualSeed(0);
  const model = cnn();
  const train = fl.datasets.fashionMNIST({ split: 'train', limit });
  const sampler = new fl.data.DistributedSampler(train, { seed: 0 });
  const loader = new fl.data.DataLoader(train, { batchSize, sampler });
  model.train();

  let step: (x: fl.Tensor, y: fl.Tensor) => Promise<fl.Tensor>;
  let finish: () => Promise<void> = async () => {};
  {
    // Stage 3 has no buckets: each of the model's children is gathered around its calls.
    const ddp = await fl.parallel.DistributedDataParallel.create(
      model,
      (x: fl.Tensor) => model.forward(x),
      stage === 3 ? { zeroStage: 3 } : { bucketCapMB: 0.25, zeroStage: stage as 1 | 2 },
    );
    const opt = new fl.parallel.ZeroRedundancyOptimizer(ddp, fl.optim.Adam, { lr: 1e-3 });
    step = async (x, y) => {
      const loss = fl.tidy(() => {
        const l = fl.nn.functional.crossEntropy(ddp.forward(normalize(x)), y);
        l.backward();
        return l;
      });
      await ddp.syncGradients();
      await opt.step();
      opt.zeroGrad();
      return loss;
    };
    // Stage 3: the model's own tensors hold the parameters again for evaluation.
    if (stage === 3) finish = async () => ddp.gatherAll();
  }
  const { steps, msPerStep } = await trainEpochs(loader, epochs, step, {
    beforeEpoch: (e) => sampler.setEpoch(e),
    rank0Only: true,
  });
  await finish();
  const peak = fl.memory().cpu.peakBytes;
  if (pg.rank === 0) {
    const acc = await evaluate(model);
    console.log(
      JSON.stringify({
        example: 'zero-fashion-mnist',
        stage,
        ranks: pg.size,
        epochs,
        steps,
        batch_per_rank: batchSize,
        test_acc: Number(acc.toFixed(4)),
        ms_per_step: Number(msPerStep.toFixed(3)),
        peak_mb: Number((peak / 2 ** 20).toFixed(2)),
      }),
    );
  }
  await fl.distributed.destroyProcessGroup();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
