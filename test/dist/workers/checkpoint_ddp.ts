/**
 * Gradient checkpointing and GradScaler inside DistributedDataParallel on real ranks:
 * 1. The same model (with dropout) trained one step through DDP plainly and with checkpointSequential:
 *    the averaged gradients are equal bit for bit, and in both runs every earlier bucket's allreduce
 *    is on the wire before the first layer's gradient arrives (buckets still overlap backward).
 * 2. GradScaler with a DDP model: rank 1 alone feeds an inf on the second step; every rank skips that
 *    step and backs off, and the replicas stay identical.
 */
import * as fl from '../../../lib/index';
import { initProcessGroup, destroyProcessGroup } from '../../../lib/distributed/index';
import { DistributedDataParallel } from '../../../lib/parallel/ddp';
import { backend, dev, device } from './backend';
import { valuesAsync } from '../../helpers/values';

const { nn } = fl;

function makeModel(): fl.nn.Sequential {
  fl.manualSeed(7);
  return new nn.Sequential(
    new nn.Linear(12, 32),
    new nn.ReLU(),
    new nn.Dropout(0.25),
    new nn.Linear(32, 32),
    new nn.Tanh(),
    new nn.Linear(32, 32),
    new nn.ReLU(),
    new nn.Dropout(0.25),
    new nn.Linear(32, 4),
  ).to(device);
}

/** One DDP step of `model` (forward through `run`); returns the averaged gradients and the overlap seen. */
async function ddpStep(model: fl.nn.Sequential, run: (x: fl.Tensor) => fl.Tensor, rank: number) {
  let inFlightAtFirstLayer = -1;
  const unhook = model.parameters()[0].registerHook(() => void (inFlightAtFirstLayer = ddp.bucketsInFlight));
  const ddp = await DistributedDataParallel.create(model, run, { bucketCapMB: 0.002 });
  fl.manualSeed(100 + rank); // each rank its own data and dropout masks
  const x = dev(fl.randn([16, 12]));
  const y = dev(fl.randn([16, 4]));
  fl.tidy(() => ddp.forward(x).sub(y).square().mean().backward());
  await ddp.syncGradients();
  unhook();
  const grads = await valuesAsync(model.parameters().map((p) => p.grad!));
  return { grads, inFlightAtFirstLayer, buckets: ddp.bucketCount };
}

async function checkpointMatchesPlain(rank: number): Promise<void> {
  const plainModel = makeModel();
  plainModel.train();
  const plain = await ddpStep(plainModel, (x) => plainModel.forward(x), rank);
  const ckptModel = makeModel();
  ckptModel.train();
  const ckpt = await ddpStep(ckptModel, (x) => fl.utils.checkpointSequential(ckptModel, 3, x), rank);
  if (plain.buckets < 3) throw new Error(`expected several buckets, got ${plain.buckets}`);
  for (const [name, r] of [
    ['plain', plain],
    ['checkpointed', ckpt],
  ] as const)
    if (r.inFlightAtFirstLayer !== r.buckets - 1)
      throw new Error(
        `${name}: ${r.inFlightAtFirstLayer} of ${r.buckets - 1} earlier buckets were in flight before the first layer's gradient`,
      );
  if (plain.grads.length !== ckpt.grads.length) throw new Error('gradient counts differ');
  for (let i = 0; i < plain.grads.length; i++)
    if (!Object.is(plain.grads[i], ckpt.grads[i]))
      throw new Error(`rank ${rank}: gradient element ${i}: checkpointed ${ckpt.grads[i]} vs plain ${plain.grads[i]}`);
  if (plain.grads.every((g) => g === 0)) throw new Error('all gradients are zero');
}

async function scalerAgrees(pg: { rank: number; broadcast(t: fl.Tensor, src: number): { wait(): Promise<unknown> } }) {
  const model = makeModel();
  const ddp = await DistributedDataParallel.create(model, (x: fl.Tensor) => model.forward(x));
  const opt = new fl.optim.SGD(model.parameters(), { lr: 0.1 });
  const scaler = new fl.amp.GradScaler({ initScale: 1024, growthInterval: 100 });
  const taken: boolean[] = [];
  for (let s = 0; s < 3; s++) {
    opt.zeroGrad();
    fl.manualSeed(200 + s * 2 + pg.rank);
    const x = dev(fl.randn([8, 12]));
    // Rank 1's inf on step 1 reaches rank 0 only through the scaler's own agreement (noSync keeps
    // the gradients local, so the allreduce cannot carry it).
    const bad = s === 1 && pg.rank === 1;
    const loss = ddp
      .forward(bad ? x.mul(Number.POSITIVE_INFINITY) : x)
      .square()
      .mean();
    if (s === 1) ddp.noSync(() => scaler.scale(loss).backward());
    else {
      scaler.scale(loss).backward();
      await ddp.syncGradients();
    }
    taken.push(await scaler.step(opt));
    scaler.update();
  }
  const want = [true, false, true];
  if (JSON.stringify(taken) !== JSON.stringify(want)) throw new Error(`rank ${pg.rank}: steps taken ${taken}, expected ${want}`);
  if (scaler.getScale() !== 512) throw new Error(`rank ${pg.rank}: scale ${scaler.getScale()}, expected 512`);
  const mine = fl.tensor(await valuesAsync(model.parameters()), { device });
  const theirs = fl.tensor(await valuesAsync(model.parameters()), { device });
  await pg.broadcast(theirs, 0).wait();
  const a = await mine.data(),
    b = await theirs.data();
  for (let i = 0; i < a.length; i++) if (!Object.is(a[i], b[i])) throw new Error(`rank ${pg.rank}: parameter ${i} differs from rank 0`);
}

async function main() {
  const pg = await initProcessGroup({ backend, timeoutMs: 30_000 });
  await checkpointMatchesPlain(pg.rank);
  await scalerAgrees(pg);
  await destroyProcessGroup();
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
