/**
 * The Fashion-MNIST CNN cut into pipeline stages that run on different ranks (processes), each
 * batch streamed through them as micro-batches with the 1F1B (or GPipe) schedule; with more ranks
 * than stages, the pipeline is replicated and each stage is data-parallel (DDP) across replicas.
 * Rank = replica · stages + stage. Start it with the launcher:
 *   npx flockml launch --nproc-per-node 2 examples/pipeline_ranks.ts --epochs 1
 *   npx flockml launch --nproc-per-node 4 examples/pipeline_ranks.ts --stages 2     (2 stages x 2 replicas)
 * Options: --epochs N, --limit N, --batch B (per replica, default 128), --stages P (2 to 4, default
 * the world size), --micro-batches M (default 4), --schedule gpipe|1f1b. The last stage of replica
 * 0 prints, as its last line, one JSON object with the test accuracy.
 */
import * as fl from '../lib';
import { cnn, normalize, option, parseArgs, trainEpochs } from './common';

/** Where the CNN's ten layers are cut for P stages (conv blocks first, the classifier last). */
const CUTS: Record<number, number[]> = { 2: [0, 7, 10], 3: [0, 3, 7, 10], 4: [0, 3, 6, 8, 10] };

async function main(): Promise<void> {
  const { epochs, limit } = parseArgs();
  const batchSize = Number(option('batch') ?? 128);
  const schedule = (option('schedule') ?? '1f1b') as 'gpipe' | '1f1b';
  const microBatches = Number(option('micro-batches') ?? 4);
  const pg = await fl.distributed.initProcessGroup({ backend: 'ring' });
  const stages = Number(option('stages') ?? pg.size);
  if (!CUTS[stages] || pg.size % stages !== 0)
    throw new RangeError(`--stages must be 2, 3 or 4 and divide the world size ${pg.size}, got ${stages}`);
  const replicas = pg.size / stages;
  const replica = Math.floor(pg.rank / stages),
    stage = pg.rank % stages;
  // Every rank makes every group, in the same order: one pipeline per replica, then one
  // data-parallel group per stage.
  const pipes: (fl.distributed.ProcessGroup | null)[] = [];
  for (let r = 0; r < replicas; r++) pipes.push(await fl.distributed.newGroup(Array.from({ length: stages }, (_, s) => r * stages + s)));
  const dps: (fl.distributed.ProcessGroup | null)[] = [];
  if (replicas > 1)
    for (let s = 0; s < stages; s++) dps.push(await fl.distributed.newGroup(Array.from({ length: replicas }, (_, r) => r * stages + s)));

  fl.manualSeed(0); // every rank builds the same model and keeps its own stage's layers
  const layers = [...cnn().children()];
  const module = new fl.nn.Sequential(...layers.slice(CUTS[stages][stage], CUTS[stages][stage + 1]));
  const dp = dps[stage];
  const stageModule = dp
    ? await fl.parallel.DistributedDataParallel.create(module, (x: fl.Tensor) => module.forward(x), { group: dp })
    : module;
  const pipe = new fl.parallel.DistributedPipeline(stageModule, { group: pipes[replica]!, microBatches, schedule });
  const opt = new fl.optim.Adam(module.parameters(), { lr: 1e-3 });

  // The stages of one replica walk the same batches: the first uses the images, the last the labels.
  const train = fl.datasets.fashionMNIST({ split: 'train', limit });
  const sampler = new fl.data.DistributedSampler(train, { numReplicas: replicas, rank: replica, seed: 0 });
  const loader = new fl.data.DataLoader(train, { batchSize, sampler });
  const F = fl.nn.functional;
  module.train();
  const step = async (x: fl.Tensor, y: fl.Tensor) => {
    const input = pipe.isFirst ? fl.tidy(() => normalize(x)) : null;
    const loss = await pipe.step(input, pipe.isLast ? y : null, (out, t) => F.crossEntropy(out, t));
    input?.dispose();
    fl.tidy(() => opt.step());
    opt.zeroGrad();
    return loss;
  };
  const { steps, msPerStep } = await trainEpochs(loader, epochs, step, {
    beforeEpoch: (e) => sampler.setEpoch(e),
    rank0Only: true,
  });

  // Test accuracy through replica 0's pipeline; the other replicas hold the same weights.
  module.eval();
  let correct = 0;
  const test = fl.datasets.fashionMNIST({ split: 'test' });
  if (replica === 0)
    for (const [x, y] of new fl.data.DataLoader(test, { batchSize: 1000 })) {
      const input = pipe.isFirst ? fl.tidy(() => normalize(x)) : null;
      const out = await pipe.forward(input);
      input?.dispose();
      if (out) correct += await fl.tidy(() => out.argmax(1).eq(y).sum()).item();
      out?.dispose();
      x.dispose();
      y.dispose();
    }
  if (replica === 0 && pipe.isLast) {
    const st = pipe.stats()!;
    console.log(
      JSON.stringify({
        example: 'pipeline-ranks',
        ranks: pg.size,
        stages,
        replicas,
        schedule,
        micro_batches: microBatches,
        epochs,
        steps,
        ms_per_step: +msPerStep.toFixed(2),
        wait_ms_last_step: +st.waitMs.toFixed(2),
        test_acc: +(correct / test.length).toFixed(4),
      }),
    );
  }
  await fl.distributed.destroyProcessGroup();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
