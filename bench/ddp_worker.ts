/** One rank of bench/ddp.ts (started by the launcher). */
import * as fl from '../lib';
import { cnn } from '../examples/common';

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.floor(s.length / 2)] : 0;
}

async function main(): Promise<void> {
  const steps = Number(process.env.BENCH_STEPS ?? 50);
  const bucketCapMB = Number(process.env.BENCH_BUCKET_MB ?? 0.25);
  const pg = await fl.distributed.initProcessGroup({ backend: 'ring' });
  // Share the machine's cores between the ranks, as one process per GPU would not need to.
  fl.setNumThreads(Math.max(1, Math.floor(fl.getNumThreads() / pg.size)));
  fl.manualSeed(0);
  const model = cnn();
  const ddp = await fl.parallel.DistributedDataParallel.create(model, (x: fl.Tensor) => model.forward(x), { bucketCapMB });
  const opt = new fl.optim.Adam(model.parameters(), { lr: 1e-3 });
  const x = fl.randn([64, 1, 28, 28]),
    y = fl.randint(0, 10, [64]);
  const backward = () =>
    fl.tidy(() => {
      opt.zeroGrad();
      fl.nn.functional.crossEntropy(ddp.forward(x), y).backward();
    });
  // Per timed step: when this rank's device finished backward and when the allreduces completed,
  // on the machine's wall clock so ranks can be compared.
  const computeDone: number[] = [],
    commDone: number[] = [];
  const syncStep = async () => {
    backward();
    await ddp.syncGradients();
    computeDone.push(performance.timeOrigin + ddp.lastStep!.computeDoneAt);
    commDone.push(performance.timeOrigin + ddp.lastStep!.commDoneAt);
    fl.tidy(() => opt.step());
  };
  const localStep = async () => {
    ddp.noSync(backward);
    fl.tidy(() => opt.step());
  };
  const time = async (fn: () => Promise<void>) => {
    for (let i = 0; i < 3; i++) await fn();
    await fl.sync();
    await pg.barrier().wait();
    const t0 = performance.now();
    for (let i = 0; i < steps; i++) await fn();
    await fl.sync();
    return (performance.now() - t0) / steps;
  };
  const ddpMs = await time(syncStep);
  // Exposed communication: how long the allreduces ran on after the LAST rank finished backward
  // (waiting for a slower rank is skew between ranks, not communication).
  const timed = computeDone.slice(-steps),
    base = timed[0];
  const mine = fl.tensor(timed.map((t) => t - base).concat(commDone.slice(-steps).map((t) => t - base)), { dtype: 'f64' });
  const all = fl.zeros([pg.size, 2 * steps], { dtype: 'f64' });
  await pg.allGather(all, mine).wait();
  const rows = all.toArray() as number[][];
  const offsets = await (async () => {
    const b = fl.tensor([base], { dtype: 'f64' }),
      bs = fl.zeros([pg.size], { dtype: 'f64' });
    await pg.allGather(bs, b).wait();
    return Array.from(bs.dataSync() as Float64Array);
  })();
  const exposed: number[] = [],
    skew: number[] = [];
  for (let i = 0; i < steps; i++) {
    const done = rows.map((r, k) => offsets[k] + r[i]);
    const lastCompute = Math.max(...done),
      firstCompute = Math.min(...done);
    const commEnd = offsets[pg.rank] + rows[pg.rank][steps + i];
    exposed.push(Math.max(0, commEnd - lastCompute));
    skew.push(lastCompute - firstCompute);
  }
  // Medians: on a shared CPU a few steps catch a descheduled thread, which a mean would let
  // dominate; the mean of the exposed time is printed as well.
  const exposedMs = median(exposed),
    skewMs = median(skew);
  const exposedMeanMs = exposed.reduce((a, b) => a + b, 0) / steps;
  const localMs = await time(localStep);
  // The same allreduces, alone: one flat tensor per bucket, timed one step at a time.
  const buckets = ddp.bucketSizes.map((n) => fl.randn([n]));
  const commTimes: number[] = [];
  for (let i = 0; i < steps + 3; i++) {
    await pg.barrier().wait();
    const t0 = performance.now();
    await Promise.all(buckets.map((b) => pg.allReduce(b, { op: 'avg' }).wait()));
    if (i >= 3) commTimes.push(performance.now() - t0);
  }
  const commMs = median(commTimes);
  if (pg.rank === 0) {
    const share = (exposed: number) => (pg.size > 1 ? +Math.min(1, Math.max(0, 1 - exposed / commMs)).toFixed(3) : null);
    console.log(
      JSON.stringify({
        bench: 'ddp',
        model: 'fashion-mnist-cnn',
        backend: 'ring',
        ranks: pg.size,
        batch_per_rank: 64,
        buckets: buckets.length,
        threads_per_rank: fl.getNumThreads(),
        ms_per_step: +ddpMs.toFixed(2),
        local_ms: +localMs.toFixed(2),
        allreduce_ms: pg.size > 1 ? +commMs.toFixed(2) : 0,
        exposed_ms: +exposedMs.toFixed(2),
        exposed_mean_ms: +exposedMeanMs.toFixed(2),
        rank_skew_ms: +skewMs.toFixed(2),
        hidden_share: share(exposedMs),
        hidden_share_mean: share(exposedMeanMs),
      }),
    );
  }
  await fl.distributed.destroyProcessGroup();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
