/**
 * Fail-stop under DDP: rank FAIL_RANK's step FAIL_STEP fails mid-step (MODE=index: an out-of-range
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

const STEPS = 4,
  BATCH = 256, // per rank; large enough that backward's kernels are queued behind the failure
  IN = 128,
  HIDDEN = 256,
  CLASSES = 10;
const FAIL_RANK = Number(process.env.FAIL_RANK ?? 1),
  FAIL_STEP = Number(process.env.FAIL_STEP ?? 2),
  MODE = process.env.MODE ?? 'index';

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
  const opt = new fl.optim.SGD(model.parameters(), { lr: 0.1, momentum: 0.9 });
  const ddp = await DistributedDataParallel.create(model, (x: fl.Tensor) => model.forward(x) as fl.Tensor, { bucketCapMB: 0.05 });
  const errors: { step: number; code?: string; message: string; where: string }[] = [];
  let unchanged = true;
  for (let s = 0; s < STEPS; s++) {
    const before = s === FAIL_STEP ? await bytes([...model.parameters(), ...[...opt.state.values()].flatMap((st) => Object.values(st).filter((v) => v instanceof fl.Tensor) as fl.Tensor[])]) : '';
    let where = 'forward';
    try {
      opt.zeroGrad();
      const b = batch(s, pg.rank);
      const bad = s === FAIL_STEP && pg.rank === FAIL_RANK;
      const y = bad && MODE === 'index' ? fl.cat([b.y.narrow(0, 0, BATCH - 1), fl.tensor([CLASSES + 5], { dtype: 'i64' })]) : b.y;
      const loss = fl.nn.functional.crossEntropy(ddp.forward(b.x), y);
      if (bad && MODE === 'oom') native.failAllocAfter(2);
      where = 'backward';
      loss.backward();
      where = 'syncGradients';
      await ddp.syncGradients();
      where = 'step';
      opt.step();
      where = 'item';
      await loss.item();
    } catch (e) {
      const err = e as Error & { code?: string };
      errors.push({ step: s, code: err.code, message: err.message.split('\n')[0], where });
    }
    native.failAllocAfter(-1);
    if (s === FAIL_STEP) {
      const after = await bytes([...model.parameters(), ...[...opt.state.values()].flatMap((st) => Object.values(st).filter((v) => v instanceof fl.Tensor) as fl.Tensor[])]);
      unchanged = before === after;
    }
  }
  // Within f32 tolerance of the reference (the ranks' gradients are averaged in another order).
  let maxDiff = 0;
  for (let i = 0; i < ref.parameters().length; i++) {
    const a = await model.parameters()[i].data(),
      b = await ref.parameters()[i].data();
    for (let k = 0; k < a.length; k++) maxDiff = Math.max(maxDiff, Math.abs(Number(a[k]) - Number(b[k])));
  }
  // Identical on every rank: rank 0's parameters, broadcast, against each rank's own.
  const flat = fl.cat(model.parameters().map((p) => p.detach().reshape([-1])));
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
