/**
 * DDP equivalence: 2 ranks x batch 32 for 20 SGD steps must match 1 process x batch 64 (computed
 * here as the reference), and every rank must end with identical parameters. A third phase
 * checks noSync accumulation, then buffers following rank 0, a missing gradient reported,
 * findUnusedParameters, and 16-bit gradient compression.
 */
import * as fl from '../../../lib/index';
import { copy_ } from '../../../lib/ops/elementwise';
import { initProcessGroup, destroyProcessGroup, newGroup } from '../../../lib/distributed/index';
import { DistributedDataParallel } from '../../../lib/parallel/ddp';
import { backend, dev, device, on } from './backend';
import { close } from '../../helpers/reference';
import { valuesAsync } from '../../helpers/values';

const STEPS = 20,
  BATCH = 64,
  LR = 0.05;

function makeModel(perturb: number) {
  fl.manualSeed(1234);
  const params = [
    fl.randn([8, 16], { std: 0.3 }),
    fl.zeros([16]),
    fl.randn([16, 16], { std: 0.3 }),
    fl.zeros([16]),
    fl.randn([16, 1], { std: 0.3 }),
    fl.zeros([1]),
  ];
  // Ranks other than 0 start elsewhere: DDP's initial broadcast must fix that.
  const ps = params.map((p) => fl.keep(dev(perturb ? p.add(perturb) : p)).requiresGrad_());
  return {
    parameters: () => ps,
    forward: (x: fl.Tensor) => x.matmul(ps[0]).add(ps[1]).relu().matmul(ps[2]).add(ps[3]).tanh().matmul(ps[4]).add(ps[5]),
  };
}

function data() {
  fl.manualSeed(99);
  const x = fl.keep(dev(fl.randn([STEPS * BATCH, 8])));
  const y = fl.keep(dev(fl.randn([STEPS * BATCH, 1])));
  return { x, y };
}

function sgd(params: fl.Tensor[]) {
  fl.noGrad(() => fl.tidy(() => params.forEach((p) => copy_(p, p.sub(p.grad!.mul(LR))))));
  params.forEach((p) => {
    p.grad?.dispose();
    p.grad = null;
  });
}

async function main() {
  const pg = await initProcessGroup({ backend, timeoutMs: 30_000 });
  const { x, y } = data();

  // Reference: one process, the whole batch.
  const ref = makeModel(0);
  for (let s = 0; s < STEPS; s++) {
    fl.tidy(() =>
      ref
        .forward(x.narrow(0, s * BATCH, BATCH))
        .sub(y.narrow(0, s * BATCH, BATCH))
        .square()
        .mean()
        .backward(),
    );
    sgd(ref.parameters());
  }

  // DDP: each rank its half of every batch; a small bucket cap so there are several buckets.
  const model = makeModel(pg.rank === 0 ? 0 : 0.5);
  // Overlap: this hook runs before DDP's own hook on the first layer's weight (hooks fire in
  // registration order), i.e. when that is the only gradient still missing: every other bucket's
  // allreduce must already be on the wire while backward is still running.
  let inFlightAtFirstLayer = -1;
  const unhook = model.parameters()[0].registerHook(() => void (inFlightAtFirstLayer = ddp.bucketsInFlight));
  const ddp = await DistributedDataParallel.create(model, model.forward, { bucketCapMB: 0.0005 });
  const half = BATCH / pg.size;
  if (ddp.bucketCount < 2) throw new Error(`expected several buckets, got ${ddp.bucketCount}`);
  for (let s = 0; s < STEPS; s++) {
    const at = s * BATCH + pg.rank * half;
    fl.tidy(() =>
      ddp
        .forward(x.narrow(0, at, half))
        .sub(y.narrow(0, at, half))
        .square()
        .mean()
        .backward(),
    );
    await ddp.syncGradients();
    sgd(model.parameters());
  }
  unhook();
  if (inFlightAtFirstLayer !== ddp.bucketCount - 1)
    throw new Error(`${inFlightAtFirstLayer} of ${ddp.bucketCount - 1} earlier buckets were in flight before the last gradient`);
  const got = await valuesAsync(model.parameters()),
    want = await valuesAsync(ref.parameters());
  close(got, want, 1e-4, 1e-4, 'param element (ddp against single-process)', false);

  // Identical across ranks, bit for bit: compare with rank 0's copy.
  const mine = fl.tensor(got, on()),
    theirs = fl.tensor(got, on());
  await pg.broadcast(theirs, 0).wait();
  const a = await mine.data(),
    b = await theirs.data();
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) throw new Error(`rank ${pg.rank} differs from rank 0 at ${i}`);

  // noSync: two half-steps accumulated locally, then one synchronised step, equals one step on both halves.
  const probe = makeModel(0);
  const ddp2 = await DistributedDataParallel.create(probe, probe.forward);
  const xb = x.narrow(0, pg.rank * half, half),
    yb = y.narrow(0, pg.rank * half, half);
  const lossOf = (xs: fl.Tensor, ys: fl.Tensor) => ddp2.forward(xs).sub(ys).square().mean();
  ddp2.noSync(() => fl.tidy(() => lossOf(xb.narrow(0, 0, half / 2), yb.narrow(0, 0, half / 2)).backward()));
  fl.tidy(() => lossOf(xb.narrow(0, half / 2, half / 2), yb.narrow(0, half / 2, half / 2)).backward());
  await ddp2.syncGradients();
  const refAcc = makeModel(0);
  for (let k = 0; k < 2 * pg.size; k++) {
    const rows = x.narrow(0, k * (half / 2), half / 2),
      ys = y.narrow(0, k * (half / 2), half / 2);
    fl.tidy(() => refAcc.forward(rows).sub(ys).square().mean().div(pg.size).backward());
  }
  const g1 = await valuesAsync(probe.parameters().map((p) => p.grad!)),
    g2 = await valuesAsync(refAcc.parameters().map((p) => p.grad!));
  close(g1, g2, 1e-4, 1e-5, 'noSync grad', false);
  ddp2.dispose();

  // Buffers: BatchNorm running statistics follow rank 0 (at creation and after each synchronised
  // step) even though every rank normalises different data; with broadcastBuffers false they drift.
  for (const broadcastBuffers of [true, false]) {
    fl.manualSeed(7);
    const net = new fl.nn.Sequential(new fl.nn.Linear(8, 4), new fl.nn.BatchNorm1d(4)).to(device);
    if (pg.rank !== 0) fl.noGrad(() => copy_(net.buffers()[0], fl.full([4], 3, on()))); // must be overwritten
    const ddp4 = await DistributedDataParallel.create(net, (t: fl.Tensor) => net.forward(t), { broadcastBuffers });
    const first = (await valuesAsync(net.buffers())).map(Number); // numBatchesTracked is i64
    const rank0First = fl.tensor(first, on({ dtype: 'f64' as const }));
    await pg.broadcast(rank0First, 0).wait();
    if ((await rank0First.data()).some((v, i) => v !== first[i]))
      throw new Error(`rank ${pg.rank}: buffers differ from rank 0 after create`);
    let rank0Stats: number[] = [];
    for (let s = 0; s < 3; s++) {
      if (pg.rank === 0) rank0Stats = await valuesAsync(net.buffers().slice(0, 2)); // what rank 0 starts this step with
      fl.tidy(() =>
        ddp4
          .forward(x.narrow(0, s * BATCH + pg.rank * half, half).mul(pg.rank + 1))
          .square()
          .mean()
          .backward(),
      );
      await ddp4.syncGradients();
    }
    const statsNow = await valuesAsync(net.buffers().slice(0, 2));
    const stats = fl.tensor(statsNow, on({ dtype: 'f64' as const })),
      rank0 = fl.tensor(statsNow, on({ dtype: 'f64' as const }));
    await pg.broadcast(rank0, 0).wait();
    const mineS = await stats.data(),
      zeroS = await rank0.data();
    const same = mineS.every((v, i) => v === zeroS[i]);
    if (broadcastBuffers && !same) throw new Error(`rank ${pg.rank}: running statistics differ from rank 0's after synchronised steps`);
    if (!broadcastBuffers && pg.rank !== 0 && same) throw new Error('broadcastBuffers false: running statistics were synchronised anyway');
    if (pg.rank === 0 && rank0Stats.every((v, i) => v === mineS[i])) throw new Error('running statistics did not change during the steps');
    const steps = await net.buffers()[2].data();
    if (Number(steps[0]) !== 3) throw new Error(`numBatchesTracked is ${steps[0]}, expected 3`);
    ddp4.dispose();
  }

  // A parameter outside the loss: the error names it.
  const unused = makeModel(0);
  const ddp3 = await DistributedDataParallel.create(unused, unused.forward);
  fl.tidy(() => unused.parameters()[0].sum().backward());
  try {
    await ddp3.syncGradients();
    throw new Error('expected a missing-gradient error');
  } catch (e) {
    if (!/no gradient arrived.*#1 \[16\]/.test((e as Error).message)) throw e;
  }
  await unusedParameters(pg, x);
  await compressed(pg, x, y);
  await destroyProcessGroup();
  console.log(`rank ${pg.rank}: ddp ok (${backend}, ${device}, params on ${model.parameters()[0].device})`);
}

// findUnusedParameters: rank 0's forward skips a branch that rank 1 uses. Rank 0 contributes zeros
// for it, every bucket is reduced (one parameter per bucket, so one bucket is all zeros on rank 0),
// and the averaged gradients equal the plain per-rank gradients averaged by hand.
async function unusedParameters(pg: Awaited<ReturnType<typeof initProcessGroup>>, x: fl.Tensor) {
  const build = () => {
    fl.manualSeed(5);
    const ps = [fl.randn([8, 4]), fl.randn([8, 4]), fl.randn([4, 1])].map((p) => fl.keep(dev(p)).requiresGrad_());
    const forward = (xs: fl.Tensor, useB: boolean) => {
      const h = useB ? xs.matmul(ps[0]).add(xs.matmul(ps[1])) : xs.matmul(ps[0]);
      return h.tanh().matmul(ps[2]);
    };
    return { parameters: () => ps, forward };
  };
  const useB = pg.rank % 2 === 1;
  const xs = x.narrow(0, pg.rank * 16, 16);
  const plain = build();
  fl.tidy(() => plain.forward(xs, useB).square().mean().backward());
  const want: number[] = [];
  for (const p of plain.parameters()) {
    const g = p.grad ? p.grad.clone() : fl.zerosLike(p);
    await pg.allReduce(g, { op: 'avg' }).wait();
    want.push(...Array.from(await g.data(), Number));
  }
  const model = build();
  const ddp = await DistributedDataParallel.create(model, model.forward, { bucketCapMB: 1e-5, findUnusedParameters: true });
  if (ddp.bucketCount !== 3) throw new Error(`expected a bucket per parameter, got ${ddp.bucketCount}`);
  for (let step = 0; step < 2; step++) {
    // twice: the per-step bookkeeping must reset
    fl.tidy(() => ddp.forward(xs, useB).square().mean().backward());
    await ddp.syncGradients();
    const got = await valuesAsync(model.parameters().map((p) => p.grad!));
    close(got, want, 1e-5, 1e-6, `findUnusedParameters step ${step}, grad`, false);
    model.parameters().forEach((p) => {
      p.grad?.dispose();
      p.grad = null;
    });
  }
  ddp.dispose();

  // A loss that reaches a parameter outside the forward outputs is refused, not silently dropped.
  // Each rank checks this on a group of its own, so no other rank waits on it.
  const solo: Awaited<ReturnType<typeof newGroup>>[] = [];
  for (let r = 0; r < pg.size; r++) solo.push(await newGroup([r]));
  const own = solo[pg.rank]!,
    m2 = build();
  const ddp2 = await DistributedDataParallel.create(m2, m2.forward, { bucketCapMB: 1e-5, findUnusedParameters: true, group: own });
  try {
    fl.tidy(() => ddp2.forward(xs, false).sum().add(m2.parameters()[1].sum()).backward());
    throw new Error('expected the gradient outside the forward outputs to be refused');
  } catch (e) {
    if (!/#1 \[8,4\] got a gradient although the forward outputs do not depend on it/.test((e as Error).message)) throw e;
  }
}

// compression: the averaged gradients equal the full-precision average to 16-bit precision, and
// are not simply the full-precision values (the wire really carried 16 bits).
async function compressed(pg: Awaited<ReturnType<typeof initProcessGroup>>, x: fl.Tensor, y: fl.Tensor) {
  const half = BATCH / pg.size;
  const gradsWith = async (compression: 'none' | 'fp16' | 'bf16') => {
    const m = makeModel(0);
    const ddp = await DistributedDataParallel.create(m, m.forward, { bucketCapMB: 0.0005, compression });
    fl.tidy(() =>
      ddp
        .forward(x.narrow(0, pg.rank * half, half))
        .sub(y.narrow(0, pg.rank * half, half))
        .square()
        .mean()
        .backward(),
    );
    await ddp.syncGradients();
    ddp.dispose();
    return valuesAsync(m.parameters().map((p) => p.grad!));
  };
  const exact = await gradsWith('none');
  // Rounding error scales with what each rank sent, not with the (possibly cancelling) average.
  const local = makeModel(0);
  fl.tidy(() =>
    local
      .forward(x.narrow(0, pg.rank * half, half))
      .sub(y.narrow(0, pg.rank * half, half))
      .square()
      .mean()
      .backward(),
  );
  const sent = fl
    .tensor(await valuesAsync(local.parameters().map((p) => p.grad!)), on())
    .abs()
    .div(pg.size);
  await pg.allReduce(sent).wait();
  const magnitude = await valuesAsync([sent]);
  for (const [compression, bits] of [
    ['bf16', 8],
    ['fp16', 11],
  ] as const) {
    const got = await gradsWith(compression);
    let differs = 0;
    for (let i = 0; i < exact.length; i++) {
      // each rank's rounding plus the rounding of each partial sum: a few units in the last place
      const tol = 4 * 2 ** -bits * magnitude[i] + 1e-12;
      if (Math.abs(got[i] - exact[i]) > tol) throw new Error(`${compression} grad ${i}: ${got[i]} vs ${exact[i]}`);
      if (got[i] !== exact[i]) differs++;
    }
    if (differs < exact.length / 4) throw new Error(`${compression}: only ${differs} of ${exact.length} gradients were rounded`);
  }
  for (const bucketCapMB of [0, -1, NaN, Infinity]) {
    try {
      await DistributedDataParallel.create(makeModel(0), makeModel(0).forward, { bucketCapMB });
      throw new Error(`expected bucketCapMB ${bucketCapMB} to be refused`);
    } catch (e) {
      if ((e as { code?: string }).code !== 'ERR_RANGE' || !(e instanceof RangeError)) throw e;
    }
  }
  try {
    await DistributedDataParallel.create(makeModel(0), makeModel(0).forward, { compression: 'int8' as 'fp16' });
    throw new Error('expected a bad compression to be refused');
  } catch (e) {
    if ((e as { code?: string }).code !== 'ERR_ARG') throw e;
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
