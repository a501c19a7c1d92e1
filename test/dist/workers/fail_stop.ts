/**
 * Fail-stop under STRATEGY (ddp, zero1: ZeroRedundancyOptimizer, zero2: DDP zeroStage 2 with it,
 * fsdp: FullyShardedDataParallel): rank FAIL_RANK's step FAIL_STEP fails mid-step (MODE=index: an out-of-range
 * target in the loss; MODE=oom: an allocation that fails while backward's kernels run). Every
 * rank's syncGradients (or the step) must reject — ERR_PEER_FAILED on the others, the original
 * error on the failing rank — no rank may apply that step, and the job trains on: the parameters
 * end equal on every rank and equal to a single-process run that skipped the bad batch.
 * Prints one JSON line `{"result":true,...}`.
 */
import * as fl from '../../../lib/index';
import { native } from '../../../lib/native';
import { initProcessGroup, destroyProcessGroup } from '../../../lib/distributed/index';
import { DistributedDataParallel } from '../../../lib/parallel/ddp';
import { ZeroRedundancyOptimizer } from '../../../lib/parallel/zero/index';
import { FullyShardedDataParallel } from '../../../lib/parallel/zero/fsdp';

const STEPS = 4,
  BATCH = 256, // per rank; large enough that backward's kernels are queued behind the failure
  IN = 128,
  HIDDEN = 256,
  CLASSES = 10;
const FAIL_RANK = Number(process.env.FAIL_RANK ?? 1),
  FAIL_STEP = Number(process.env.FAIL_STEP ?? 2),
  MODE = process.env.MODE ?? 'index',
  STRATEGY = process.env.STRATEGY ?? 'ddp';

/** One strategy's training step pieces, over the same model. */
interface Trainer {
  forward(x: fl.Tensor): fl.Tensor;
  afterBackward(): Promise<void>;
  step(): Promise<void>;
  zeroGrad(): void;
  /** What a step changes on this rank: parameters (or shards) and optimizer state. */
  held(): fl.Tensor[];
  /** The whole parameters, for comparing with the reference. */
  whole(): Promise<fl.Tensor[]>;
}

const stateTensors = (state: Map<fl.Tensor, Record<string, fl.Tensor | number>>) =>
  [...state.values()].flatMap((st) => Object.values(st).filter((v) => v instanceof fl.Tensor) as fl.Tensor[]);

async function trainer(model: fl.nn.Sequential): Promise<Trainer> {
  const fwd = (x: fl.Tensor) => model.forward(x) as fl.Tensor;
  if (STRATEGY === 'ddp' || STRATEGY === 'zero2') {
    const ddp = await DistributedDataParallel.create(model, fwd, {
      bucketCapMB: 0.05,
      ...(STRATEGY === 'zero2' ? { zeroStage: 2 as const } : {}),
    });
    if (STRATEGY === 'ddp') {
      const opt = new fl.optim.SGD(model.parameters(), { lr: 0.1, momentum: 0.9 });
      return {
        forward: (x) => ddp.forward(x),
        afterBackward: () => ddp.syncGradients(),
        step: async () => opt.step(),
        zeroGrad: () => opt.zeroGrad(),
        held: () => [...model.parameters(), ...stateTensors(opt.state)],
        whole: async () => model.parameters(),
      };
    }
    const opt = new ZeroRedundancyOptimizer(ddp, fl.optim.SGD, { lr: 0.1, momentum: 0.9 });
    return {
      forward: (x) => ddp.forward(x),
      afterBackward: () => ddp.syncGradients(),
      step: () => opt.step(),
      zeroGrad: () => opt.zeroGrad(),
      held: () => [...model.parameters(), ...stateTensors(opt.optimizer.state)],
      whole: async () => model.parameters(),
    };
  }
  if (STRATEGY === 'zero1') {
    const opt = new ZeroRedundancyOptimizer(model.parameters(), fl.optim.SGD, { lr: 0.1, momentum: 0.9 });
    return {
      forward: fwd,
      afterBackward: async () => {},
      step: () => opt.step(),
      zeroGrad: () => opt.zeroGrad(),
      held: () => [...model.parameters(), ...stateTensors(opt.optimizer.state)],
      whole: async () => model.parameters(),
    };
  }
  const fsdp = await FullyShardedDataParallel.create(model);
  const opt = new fl.optim.SGD(fsdp.parameters(), { lr: 0.1, momentum: 0.9 });
  return {
    forward: (x) => fsdp.forward(x) as fl.Tensor,
    afterBackward: () => fsdp.syncGradients(),
    step: async () => opt.step(),
    zeroGrad: () => opt.zeroGrad(),
    held: () => [...fsdp.parameters(), ...stateTensors(opt.state)],
    whole: async () => {
      await fsdp.gatherAll();
      return model.parameters();
    },
  };
}

function makeModel(): fl.nn.Sequential {
  fl.manualSeed(7);
  return new fl.nn.Sequential(new fl.nn.Linear(IN, HIDDEN), new fl.nn.ReLU(), new fl.nn.Linear(HIDDEN, CLASSES));
}

function batch(step: number, rank: number): { x: fl.Tensor; y: fl.Tensor } {
  fl.manualSeed(100 * step + rank);
  return { x: fl.randn([BATCH, IN]), y: fl.randint(0, CLASSES, [BATCH], { dtype: 'i64' }) };
}

async function bytes(ts: fl.Tensor[]): Promise<string> {
  const parts: string[] = [];
  for (const t of ts) parts.push(Buffer.from((await t.data()).buffer).toString('base64'));
  return parts.join('|');
}

async function main() {
  const pg = await initProcessGroup({ backend: 'ring', timeoutMs: 30_000 });
  const n = pg.size;

  // Reference: one process over every rank's share of each good step (the mean of the ranks'
  // losses is the loss on the concatenated batch), the failed step skipped by all.
  const ref = makeModel();
  const refOpt = new fl.optim.SGD(ref.parameters(), { lr: 0.1, momentum: 0.9 });
  for (let s = 0; s < STEPS; s++) {
    if (s === FAIL_STEP) continue;
    refOpt.zeroGrad();
    const parts = Array.from({ length: n }, (_, r) => batch(s, r));
    const x = fl.cat(parts.map((p) => p.x)),
      y = fl.cat(parts.map((p) => p.y));
    fl.nn.functional.crossEntropy(ref.forward(x) as fl.Tensor, y).backward();
    refOpt.step();
  }

  const model = makeModel();
  const t = await trainer(model);
  const errors: { step: number; code?: string; message: string; where: string }[] = [];
  let unchanged = true;
  for (let s = 0; s < STEPS; s++) {
    const before = s === FAIL_STEP ? await bytes(t.held()) : '';
    let where = 'forward';
    try {
      t.zeroGrad();
      const b = batch(s, pg.rank);
      const bad = s === FAIL_STEP && pg.rank === FAIL_RANK;
      const y = bad && MODE === 'index' ? fl.cat([b.y.narrow(0, 0, BATCH - 1), fl.tensor([CLASSES + 5], { dtype: 'i64' })]) : b.y;
      const loss = fl.nn.functional.crossEntropy(t.forward(b.x), y);
      if (bad && MODE === 'oom') native.failAllocAfter(2);
      where = 'backward';
      loss.backward();
      where = 'syncGradients';
      await t.afterBackward();
      where = 'step';
      await t.step();
      where = 'item';
      await loss.item();
    } catch (e) {
      const err = e as Error & { code?: string };
      errors.push({ step: s, code: err.code, message: err.message.split('\n')[0], where });
    }
    native.failAllocAfter(-1);
    if (s === FAIL_STEP) {
      const after = await bytes(t.held());
      unchanged = before === after;
    }
  }
  // Within f32 tolerance of the reference (the ranks' gradients are averaged in another order).
  let maxDiff = 0;
  const whole = await t.whole();
  for (let i = 0; i < ref.parameters().length; i++) {
    const a = await whole[i].data(),
      b = await ref.parameters()[i].data();
    for (let k = 0; k < a.length; k++) maxDiff = Math.max(maxDiff, Math.abs(Number(a[k]) - Number(b[k])));
  }
  // Identical on every rank: rank 0's parameters, broadcast, against each rank's own.
  const flat = fl.cat(whole.map((p) => p.detach().reshape([-1])));
  const theirs = flat.clone();
  await pg.broadcast(theirs, 0).wait();
  const sameAsRank0 = Buffer.from((await flat.data()).buffer).equals(Buffer.from((await theirs.data()).buffer));
  console.log(`${JSON.stringify({ result: true, rank: pg.rank, errors, unchanged, maxDiff, sameAsRank0 })}`);
  destroyProcessGroup();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
