/**
 * A Fashion-MNIST MLP trained with tensor parallelism inside each replica and data parallelism
 * across replicas, on a [dp, tp] device mesh: the hidden layers are a Megatron-LM pair (a
 * ColumnParallelLinear whose output stays split, a RowParallelLinear that sums the partial
 * products), the classifier is replicated; each dp replica takes its DistributedSampler share of
 * every epoch and gradients are averaged over the dp group after loss.backward(). The tensor-parallel
 * layers are ordinary modules (synchronous forward), so the model is an nn.Sequential.
 *   npx flockml launch --nproc-per-node 4 examples/tensor_parallel.ts --tp 2 --epochs 1
 *   npx flockml launch --nproc-per-node 2 examples/tensor_parallel.ts --limit 6000
 * Options: --tp N (ranks per tensor-parallel group, default 2), --epochs N, --batch B (per
 * replica, default 64), --limit N (train on the first N images), --backend ring|nccl (nccl: one
 * GPU per rank). Rank 0 prints, as its last line, one JSON object with the test accuracy.
 */
import * as fl from '../lib';
import { normalize, option, parseArgs, trainEpochs } from './common';

const { ColumnParallelLinear, RowParallelLinear } = fl.parallel.tensor;

async function main(): Promise<void> {
  const { epochs, limit } = parseArgs();
  const tpSize = Number(option('tp') ?? 2);
  const batchSize = Number(option('batch') ?? 64);
  const backend = (option('backend') ?? 'ring') as 'ring' | 'nccl';
  const world = await fl.distributed.initProcessGroup({ backend });
  const device = backend === 'nccl' ? `cuda:${fl.distributed.getLocalRank()}` : 'cpu';
  if (world.size % tpSize !== 0) throw new Error(`--tp ${tpSize} must divide the ${world.size} ranks`);
  const mesh = await fl.distributed.deviceMesh([world.size / tpSize, tpSize]);
  const tp = mesh.group('tp');
  const dp = mesh.group('dp');

  // The same seed everywhere: each rank keeps its slice of the weights the unsplit MLP would draw.
  fl.manualSeed(0);
  const model = new fl.nn.Sequential(
    new ColumnParallelLinear(784, 512, { group: tp, gatherOutput: false, device }),
    new fl.nn.ReLU(),
    new RowParallelLinear(512, 128, { group: tp, inputIsParallel: true, device }),
    new fl.nn.ReLU(),
    new fl.nn.Linear(128, 10, { device }),
  );
  const params = [...model.parameters()];
  const forward = (x: fl.Tensor) => model.forward(normalize(x).reshape([-1, 784]));
  const opt = new fl.optim.Adam(params, { lr: 1e-3 });

  const train = fl.datasets.fashionMNIST({ split: 'train', limit });
  // Ranks of one tensor-parallel group must see the same batch: the sampler splits over dp only.
  const sampler = new fl.data.DistributedSampler(train, { numReplicas: mesh.size('dp'), rank: mesh.localRank('dp'), seed: 0 });
  const loader = new fl.data.DataLoader(train, { batchSize, sampler });
  const step = async (x: fl.Tensor, y: fl.Tensor) => {
    const xd = x.to(device);
    const loss = fl.nn.functional.crossEntropy(forward(xd), y.to(device));
    opt.zeroGrad();
    loss.backward();
    await Promise.all(params.map((p) => dp.allReduce(p.grad!, { op: 'avg' }).wait()));
    fl.tidy(() => opt.step());
    return loss;
  };
  const { steps, msPerStep } = await trainEpochs(loader, epochs, step, { beforeEpoch: (e) => sampler.setEpoch(e), rank0Only: true });

  // Every rank evaluates (the tensor-parallel layers need their whole group); rank 0 reports.
  model.eval();
  let correct = 0;
  let total = 0;
  for await (const [x, y] of new fl.data.DataLoader(fl.datasets.fashionMNIST({ split: 'test' }), { batchSize: 1000 })) {
    const pred = forward(x.to(device)).argmax(1);
    correct += Number(await pred.eq(y.to(device)).sum().item());
    total += y.shape[0];
  }
  if (world.rank === 0)
    console.log(
      JSON.stringify({
        example: 'tensor-parallel',
        ranks: world.size,
        mesh: { dp: mesh.size('dp'), tp: mesh.size('tp') },
        epochs,
        steps,
        batch_per_replica: batchSize,
        test_acc: Number((correct / total).toFixed(4)),
        ms_per_step: Number(msPerStep.toFixed(3)),
      }),
    );
  await fl.distributed.destroyProcessGroup();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
