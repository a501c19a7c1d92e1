/**
 * The Fashion-MNIST CNN trained with DistributedDataParallel: one process per rank, each taking
 * its DistributedSampler share of every epoch, gradients averaged by bucketed allreduces that
 * overlap backward. Start it with the launcher:
 *   npm run example:ddp -- --epochs 1            (2 ranks on the CPU ring backend)
 *   npx flockml launch --nproc-per-node 4 examples/ddp_fashion_mnist.ts --epochs 1
 * Options: --epochs N, --batch B (per rank, default 64), --limit N (train on the first N images).
 * Rank 0 prints, as its last line, one JSON object with the test accuracy.
 */
import * as fl from '../lib';
import { cnn, evaluate, normalize, parseArgs, trainEpochs } from './common';

async function main(): Promise<void> {
  const { epochs, limit } = parseArgs();
  const batchArg = process.argv.indexOf('--batch');
  const batchSize = batchArg >= 0 ? Number(process.argv[batchArg + 1]) : 64;
  const pg = await fl.distributed.initProcessGroup({ backend: 'ring' });
  fl.manualSeed(0); // every rank builds the same model; DDP broadcasts rank 0's anyway
  const model = cnn();
  // This CNN's gradients are 0.9 MB: the default 25 MB cap would make one bucket, reduced only
  // after backward. Quarter-MB buckets (3 here) start reducing while backward still runs.
  const ddp = await fl.parallel.DistributedDataParallel.create(model, (x: fl.Tensor) => model.forward(x), { bucketCapMB: 0.25 });
  const opt = new fl.optim.Adam(model.parameters(), { lr: 1e-3 });
  const train = fl.datasets.fashionMNIST({ split: 'train', limit });
  const sampler = new fl.data.DistributedSampler(train, { seed: 0 });
  const loader = new fl.data.DataLoader(train, { batchSize, sampler });
  let waited = 0; // after backward, for the allreduces (and for slower ranks)
  model.train();
  const step = async (x: fl.Tensor, y: fl.Tensor) => {
    const loss = fl.tidy(() => {
      const l = fl.nn.functional.crossEntropy(ddp.forward(normalize(x)), y);
      opt.zeroGrad();
      l.backward();
      return l;
    });
    await ddp.syncGradients();
    fl.tidy(() => opt.step());
    waited += ddp.lastStep?.exposedMs ?? 0;
    return loss;
  };
  const { steps, msPerStep } = await trainEpochs(loader, epochs, step, {
    beforeEpoch: (e) => sampler.setEpoch(e),
    rank0Only: true,
  });
  if (pg.rank === 0) {
    const acc = await evaluate(model);
    console.log(
      JSON.stringify({
        example: 'ddp-fashion-mnist',
        ranks: pg.size,
        epochs,
        steps,
        batch_per_rank: batchSize,
        test_acc: Number(acc.toFixed(4)),
        ms_per_step: Number(msPerStep.toFixed(3)),
        sync_wait_ms: Number((waited / steps).toFixed(2)),
      }),
    );
  }
  await fl.distributed.destroyProcessGroup();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
