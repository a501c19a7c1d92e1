/**
 * The Fashion-MNIST MLP trained by an asynchronous parameter server with bounded staleness: the
 * first S ranks hold the parameters and run Adam, the others are workers, each taking its
 * DistributedSampler share of every epoch, pulling parameters and pushing gradients without a
 * global barrier. Start it with the launcher:
 *   npx flockml launch --nproc-per-node 4 examples/parameter_server_fashion_mnist.ts --epochs 1
 * Options: --epochs N, --batch B (per worker, default 32), --limit N (train on the first N images),
 * --servers S (default 1), --staleness K (default 2; 0 is synchronous SGD, Infinity unbounded),
 * --lr (default 1e-3), --hidden H (the MLP's hidden width, default 128), --schedule constant|linear
 * (linear: the servers' learning rate decays linearly to zero over the run's pushes; default constant).
 * With one server, rank 0 evaluates the final parameters; with more, the first worker evaluates the
 * parameters of its last pull. That rank prints, as its last line, one JSON object with the test
 * accuracy; every rank prints its staleness record.
 */
import * as fl from '../lib';
import { evaluate, normalize, option, parseArgs, trainEpochs } from './common';

async function main(): Promise<void> {
  const { epochs, limit } = parseArgs();
  const batchSize = Number(option('batch') ?? 32);
  const servers = Number(option('servers') ?? 1);
  const staleness = Number(option('staleness') ?? 2);
  const lr = Number(option('lr') ?? 1e-3);
  const hidden = Number(option('hidden') ?? 128);
  const schedule = option('schedule') ?? 'constant';
  if (schedule !== 'constant' && schedule !== 'linear') throw new Error(`--schedule must be constant or linear, got ${schedule}`);
  fl.manualSeed(0); // the servers' initial parameters are the ones the workers start from
  const { nn } = fl;
  const model = new nn.Sequential(new nn.Flatten(), new nn.Linear(784, hidden), new nn.ReLU(), new nn.Linear(hidden, 10));
  const workers = Number(process.env.WORLD_SIZE ?? 1) - servers;
  // Every worker takes ceil(images / workers) of each epoch (DistributedSampler pads), one push per batch.
  const pushes = epochs * workers * Math.ceil(Math.ceil((limit ?? 60_000) / workers) / batchSize);
  const optimizer = schedule === 'linear' ? linearDecay(pushes) : fl.optim.Adam;
  const ps = await fl.parallel.ParameterServer.create(model, { servers, staleness, optimizer, optimizerOptions: { lr } });
  const started = performance.now();
  if (ps.isServer) {
    const stats = await ps.serve();
    console.log(JSON.stringify({ role: 'server', ...stats }));
    if (ps.rank === 0 && servers === 1) print(ps, await evaluate(model), epochs, stats.updates, performance.now() - started);
    return;
  }
  const train = fl.datasets.fashionMNIST({ split: 'train', limit });
  const sampler = new fl.data.DistributedSampler(train, { numReplicas: workers, rank: ps.rank - ps.servers, seed: 0 });
  const loader = new fl.data.DataLoader(train, { batchSize, sampler });
  model.train();
  const step = async (x: fl.Tensor, y: fl.Tensor) => {
    await ps.pull();
    const loss = fl.tidy(() => {
      const l = fl.nn.functional.crossEntropy(model.forward(normalize(x)), y);
      model.zeroGrad();
      l.backward();
      return l;
    });
    await ps.push();
    return loss;
  };
  const { steps } = await trainEpochs(loader, epochs, step, {
    beforeEpoch: (e) => sampler.setEpoch(e),
    postfix: () => ({ clock: ps.clock }),
  });
  await ps.close();
  console.log(JSON.stringify({ rank: ps.rank, role: 'worker', steps, ...ps.stats }));
  if (servers > 1 && ps.rank === servers) print(ps, await evaluate(model), epochs, steps, performance.now() - started);
}

/** Adam whose learning rate falls linearly from its initial value to zero over `total` steps (one per push). */
function linearDecay(total: number) {
  return class LinearDecayAdam extends fl.optim.Adam {
    #steps = 0;
    #base: number[] | null = null;
    override step(): void {
      this.#base ??= this.paramGroups.map((g) => g.lr);
      const f = Math.max(0, 1 - this.#steps / total);
      this.paramGroups.forEach((g, i) => {
        g.lr = this.#base![i] * f;
      });
      this.#steps++;
      super.step();
    }
  };
}

function print(ps: fl.parallel.ParameterServer, acc: number, epochs: number, steps: number, ms: number): void {
  console.log(
    JSON.stringify({
      example: 'parameter-server-fashion-mnist',
      servers: ps.servers,
      workers: ps.worldSize - ps.servers,
      staleness: ps.staleness,
      epochs,
      steps,
      test_acc: Number(acc.toFixed(4)),
      seconds: Number((ms / 1000).toFixed(1)),
    }),
  );
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
