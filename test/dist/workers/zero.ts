/**
 * ZeRO equivalence on N real ranks: 10 Adam steps of ZeroRedundancyOptimizer (stage 1, local
 * gradients reduce-scattered), DDP zeroStage 1 and 2, and FullyShardedDataParallel (stage 3), each
 * rank on its part of every batch, must match one process training on whole batches, and every
 * rank must end with identical parameters. Then: the consolidated optimizer state equals the
 * single-process optimizer's, per-rank memory of optimizer state / gradients / parameters is ~1/N,
 * sharded checkpoints save (ZERO_SAVE) and load from another world size (ZERO_LOAD), and bad
 * options fail with coded errors.
 */
import * as fl from '../../../lib/index';
import { initProcessGroup, destroyProcessGroup } from '../../../lib/distributed/index';
import { bytes, expectCode, loss } from './zero_checks';
import { close } from '../../helpers/reference';
import { valuesAsync } from '../../helpers/values';
import { DistributedDataParallel } from '../../../lib/parallel/ddp';
import { ZeroRedundancyOptimizer } from '../../../lib/parallel/zero/index';
import { FullyShardedDataParallel } from '../../../lib/parallel/zero/fsdp';
import { backend, dev, device, on } from './backend';

const STEPS = 10,
  BATCH = 24,
  LR = 0.01;
const sizes: number[][] = [[8, 13], [13], [13, 7], [7], [7, 1], [1]];

function makeParams(perturb: number): fl.Tensor[] {
  fl.manualSeed(1234);
  return sizes.map((s) => fl.keep(dev(fl.randn(s, { std: 0.4 }).add(perturb))).requiresGrad_());
}
const layer = (ps: fl.Tensor[], i: number) => (x: fl.Tensor) => x.matmul(ps[2 * i]).add(ps[2 * i + 1]);
const forward = (ps: fl.Tensor[]) => (x: fl.Tensor) => layer(ps, 2)(layer(ps, 1)(layer(ps, 0)(x).relu()).tanh());

function data() {
  fl.manualSeed(99);
  return { x: fl.keep(dev(fl.randn([STEPS * BATCH, 8]))), y: fl.keep(dev(fl.randn([STEPS * BATCH, 1]))) };
}

async function main() {
  const pg = await initProcessGroup({ backend, timeoutMs: 30_000 });
  const N = pg.size,
    per = BATCH / N;
  const { x, y } = data();
  const mine = (s: number) => [x.narrow(0, s * BATCH + pg.rank * per, per), y.narrow(0, s * BATCH + pg.rank * per, per)];

  // Reference: one process, whole batches, a plain Adam.
  const ref = makeParams(0);
  const refOpt = new fl.optim.Adam(ref, { lr: LR, weightDecay: 0.01 });
  for (let s = 0; s < STEPS; s++) {
    fl.tidy(() => loss(forward(ref)(x.narrow(0, s * BATCH, BATCH)), y.narrow(0, s * BATCH, BATCH)).backward());
    refOpt.step();
    refOpt.zeroGrad();
  }
  const want = await valuesAsync(ref);
  const refState = refOpt.stateDict();

  const sameOnAllRanks = async (what: string, got: number[]) => {
    const t = fl.tensor(got, on());
    await pg.broadcast(t, 0).wait();
    const r0 = await t.data();
    for (let i = 0; i < got.length; i++) if (r0[i] !== got[i]) throw new Error(`${what}: rank ${pg.rank} differs from rank 0 at ${i}`);
  };

  // Stage 1, standalone: local gradients, reduce-scattered in step().
  const p1 = makeParams(pg.rank === 0 ? 0 : 0.3);
  await Promise.all(p1.map((p) => pg.broadcast(p, 0).wait()));
  const zro = new ZeroRedundancyOptimizer(p1, fl.optim.Adam, { lr: LR, weightDecay: 0.01 });
  for (let s = 0; s < STEPS; s++) {
    const [xb, yb] = mine(s);
    fl.tidy(() => loss(forward(p1)(xb), yb).backward());
    await zro.step();
    zro.zeroGrad();
  }
  close(await valuesAsync(p1), want, 1e-4, 1e-4, 'ZeroRedundancyOptimizer', false);
  await sameOnAllRanks('ZeroRedundancyOptimizer', await valuesAsync(p1));

  // Its consolidated state is the single-process Adam's.
  const sd = await zro.consolidatedStateDict();
  for (const [i, st] of Object.entries(refState.state)) {
    if (sd.state[Number(i)].step !== st.step)
      throw new Error(`consolidated step of parameter ${i}: ${sd.state[Number(i)].step} vs ${st.step}`);
    for (const k of ['expAvg', 'expAvgSq'])
      close(
        await valuesAsync([sd.state[Number(i)][k] as fl.Tensor]),
        await valuesAsync([st[k] as fl.Tensor]),
        1e-5,
        1e-5,
        `consolidated ${k} of parameter ${i}`,
        false,
      );
  }
  if (sd.paramGroups[0].lr !== LR || sd.paramGroups[0].weightDecay !== 0.01) throw new Error('consolidated hyper-parameters lost');
  // ...and a plain optimizer's state dict loads back into ZeRO.
  const p1b = makeParams(0);
  const zro2 = new ZeroRedundancyOptimizer(p1b, fl.optim.Adam, { lr: 1 });
  zro2.loadStateDict(refState);
  if (zro2.paramGroups[0].lr !== LR) throw new Error('loadStateDict did not restore lr');
  close(
    await valuesAsync([(await zro2.consolidatedStateDict()).state[2].expAvg as fl.Tensor]),
    await valuesAsync([refState.state[2].expAvg as fl.Tensor]),
    1e-6,
    1e-6,
    'reloaded consolidated state',
    false,
  );

  // Checkpoints: this world size saves; another world size loads and must hold the reference state.
  if (process.env.ZERO_SAVE) await zro.saveSharded(process.env.ZERO_SAVE);
  if (process.env.ZERO_LOAD) {
    const p = makeParams(0.7);
    const z = new ZeroRedundancyOptimizer(p, fl.optim.Adam, { lr: 1 });
    await z.loadSharded(process.env.ZERO_LOAD);
    close(await valuesAsync(p), want, 1e-4, 1e-4, 'parameters loaded from another world size', false);
    const got = await z.consolidatedStateDict();
    if (got.paramGroups[0].lr !== LR) throw new Error(`loaded lr ${got.paramGroups[0].lr}`);
    for (const [i, st] of Object.entries(refState.state))
      for (const k of ['expAvg', 'expAvgSq'])
        close(
          await valuesAsync([got.state[Number(i)][k] as fl.Tensor]),
          await valuesAsync([st[k] as fl.Tensor]),
          1e-5,
          1e-5,
          `loaded ${k} of parameter ${i}`,
          false,
        );
  }

  // Param groups with their own hyper-parameters (SGD with momentum), against the plain optimizer.
  {
    // A frozen tensor in a group is left alone, as a plain optimizer leaves a parameter without gradient.
    const frozen = fl.keep(fl.ones([5], on()));
    const groups = (ps: fl.Tensor[]) => [
      { params: ps.slice(0, 4), lr: 0.05 },
      { params: [...ps.slice(4), frozen], lr: 0.01, momentum: 0.5 },
    ];
    const a = makeParams(0),
      b = makeParams(0);
    const plainOpt = new fl.optim.SGD(groups(a), { momentum: 0.9, weightDecay: 0.001 });
    const zOpt = new ZeroRedundancyOptimizer(groups(b), fl.optim.SGD, { momentum: 0.9, weightDecay: 0.001 });
    for (let s = 0; s < 3; s++) {
      fl.tidy(() => loss(forward(a)(x.narrow(0, s * BATCH, BATCH)), y.narrow(0, s * BATCH, BATCH)).backward());
      plainOpt.step();
      plainOpt.zeroGrad();
      const [xb, yb] = mine(s);
      fl.tidy(() => loss(forward(b)(xb), yb).backward());
      await zOpt.step();
      zOpt.zeroGrad();
    }
    close(await valuesAsync(b), await valuesAsync(a), 1e-4, 1e-4, 'ZeroRedundancyOptimizer with param groups', false);
    close(await valuesAsync([frozen]), [1, 1, 1, 1, 1], 0, 0, 'a frozen tensor', false);
  }

  // maxGradNorm clips the averaged gradient as clipGradNorm_ clips the whole-batch one.
  {
    const a = makeParams(0),
      b = makeParams(0);
    const plainOpt = new fl.optim.SGD(a, { lr: 0.1 });
    const zOpt = new ZeroRedundancyOptimizer(b, fl.optim.SGD, { lr: 0.1, maxGradNorm: 0.01 });
    for (let s = 0; s < 2; s++) {
      fl.tidy(() => loss(forward(a)(x.narrow(0, s * BATCH, BATCH)), y.narrow(0, s * BATCH, BATCH)).backward());
      const norm = await fl.optim.clipGradNorm_(a, 0.01).item();
      plainOpt.step();
      plainOpt.zeroGrad();
      const [xb, yb] = mine(s);
      fl.tidy(() => loss(forward(b)(xb), yb).backward());
      await zOpt.step();
      zOpt.zeroGrad();
      close([zOpt.lastGradNorm ?? -1], [norm], 1e-4, 1e-4, 'gradient norm before clipping', false);
    }
    close(await valuesAsync(b), await valuesAsync(a), 1e-4, 1e-4, 'ZeroRedundancyOptimizer with maxGradNorm', false);
  }

  // DDP zeroStage 1 and 2: the optimizer shards DDP's buckets (a small cap: several buckets).
  for (const stage of [1, 2] as const) {
    const ps = makeParams(pg.rank === 0 ? 0 : 0.3);
    // Overlap: this hook runs before DDP's on the first layer's weight (the last gradient), when
    // every other bucket must already be on the wire.
    let inFlight = -1;
    const unhook = ps[0].registerHook(() => void (inFlight = ddp.bucketsInFlight));
    const ddp = await DistributedDataParallel.create({ parameters: () => ps }, forward(ps), { zeroStage: stage, bucketCapMB: 0.0002 });
    if (ddp.bucketCount < 2) throw new Error(`expected several buckets, got ${ddp.bucketCount}`);
    const opt = new ZeroRedundancyOptimizer(ddp, fl.optim.Adam, { lr: LR, weightDecay: 0.01 });
    for (let s = 0; s < STEPS; s++) {
      const [xb, yb] = mine(s);
      fl.tidy(() => loss(ddp.forward(xb), yb).backward());
      await ddp.syncGradients();
      if (stage === 2 && ps.some((p) => p.grad)) throw new Error('zeroStage 2 kept a full gradient');
      await opt.step();
      opt.zeroGrad();
    }
    unhook();
    if (inFlight !== ddp.bucketCount - 1)
      throw new Error(`zeroStage ${stage}: ${inFlight} of ${ddp.bucketCount - 1} buckets in flight before the last gradient`);
    close(await valuesAsync(ps), want, 1e-4, 1e-4, `DDP zeroStage ${stage}`, false);
    // Its consolidated state numbers the parameters in the model's order, as a plain optimizer does.
    const csd = await opt.consolidatedStateDict();
    close(
      await valuesAsync([csd.state[0].expAvg as fl.Tensor]),
      await valuesAsync([refState.state[0].expAvg as fl.Tensor]),
      1e-5,
      1e-5,
      `DDP zeroStage ${stage} consolidated expAvg`,
      false,
    );
    await sameOnAllRanks(`DDP zeroStage ${stage}`, await valuesAsync(ps));
    ddp.dispose();
  }

  // Stage 3: each layer a unit, parameters sharded, gathered around each unit's forward and backward.
  {
    const ps = makeParams(pg.rank === 0 ? 0 : 0.3);
    const act = [(h: fl.Tensor) => h.relu(), (h: fl.Tensor) => h.tanh(), (h: fl.Tensor) => h];
    // Prefetch: while units 0 and 1 run forward, the next unit's gather is already in flight.
    const prefetched: number[] = [];
    const units = [0, 1, 2].map((i) => ({
      parameters: () => [ps[2 * i], ps[2 * i + 1]],
      forward: (h: fl.Tensor) => {
        prefetched.push(fsdp.gathersInFlight);
        return act[i](layer(ps, i)(h));
      },
    }));
    const fsdp: FullyShardedDataParallel = await FullyShardedDataParallel.create(units);
    const opt = new fl.optim.Adam(fsdp.parameters(), { lr: LR, weightDecay: 0.01 });
    // Prefetch in backward: when a unit's bias gets its gradient, the unit before it is already being gathered.
    const backPrefetched: number[] = [];
    const unhooks = [5, 3, 1].map((j) => ps[j].registerHook(() => void backPrefetched.push(fsdp.gathersInFlight)));
    for (let s = 0; s < STEPS; s++) {
      const [xb, yb] = mine(s);
      fl.tidy(() => loss(fsdp.forward(xb), yb).backward());
      if (s === 0 && ps.some((p) => p.numel() !== 0 || (p.grad && p.grad.numel() !== 0)))
        throw new Error('FSDP kept a gathered parameter or its gradient after backward');
      await fsdp.syncGradients();
      opt.step();
      opt.zeroGrad();
    }
    for (const u of unhooks) u();
    if (backPrefetched.slice(0, 3).join() !== '1,1,0')
      throw new Error(`gathers in flight during the units' backward: ${backPrefetched.slice(0, 3)}`);
    // Clipping: the norm over all ranks' blocks is the whole gradient's, and after clipping it is maxNorm.
    {
      const [xb, yb] = mine(0);
      loss(fsdp.forward(xb), yb).backward();
      // Not synchronized yet: a second forward is refused.
      await expectCode('FSDP forward before syncGradients', 'ERR_AUTOGRAD', () => fsdp.forward(xb));
      await fsdp.syncGradients();
      // The reference model holds the same trained values: its whole-batch gradient norm is the one to find.
      fl.tidy(() => loss(forward(ref)(x.narrow(0, 0, BATCH)), y.narrow(0, 0, BATCH)).backward());
      const refNorm = await fl.optim.gradNorm(ref).item();
      refOpt.zeroGrad();
      const whole = await fsdp.clipGradNorm(1e-3);
      close([whole], [refNorm], 1e-4, 1e-4, 'total norm before clipping', false);
      const sq = fsdp.parameters().map((t) => t.grad!.square().sum());
      const mineSq = Number(await fl.stack(sq).sum().item());
      const t = fl.tensor([mineSq], on({ dtype: 'f64' as const }));
      await pg.allReduce(t).wait();
      close([Math.sqrt(Number((await t.data())[0]))], [1e-3], 1e-3, 1e-3, 'clipped total norm', false);
      opt.zeroGrad();
    }
    if (prefetched.slice(0, 3).join() !== '1,1,0')
      throw new Error(`gathers in flight during the units' forward: ${prefetched.slice(0, 3)}`);
    await expectCode('FSDP forward of a non-tensor', 'ERR_ARG', () => fsdp.forward([1, 2] as never));
    if (process.env.ZERO_SAVE) await fsdp.saveSharded(`${process.env.ZERO_SAVE}/fsdp`, { optimizer: opt });
    fsdp.gatherAll();
    close(await valuesAsync(ps), want, 1e-4, 1e-4, 'FullyShardedDataParallel', false);
    await sameOnAllRanks('FullyShardedDataParallel', await valuesAsync(ps));
    fsdp.dispose();
  }
  // prefetch: false issues each gather only when its unit runs, and trains the same.
  {
    const trained: number[][] = [];
    for (const prefetch of [true, false]) {
      const ps = makeParams(0);
      const inFlight: number[] = [];
      const units = [0, 1, 2].map((i) => ({
        parameters: () => [ps[2 * i], ps[2 * i + 1]],
        forward: (h: fl.Tensor) => {
          inFlight.push(fsdp.gathersInFlight);
          return layer(ps, i)(h).tanh();
        },
      }));
      const fsdp: FullyShardedDataParallel = await FullyShardedDataParallel.create(units, { prefetch });
      const opt = new fl.optim.SGD(fsdp.parameters(), { lr: 0.1 });
      for (let s = 0; s < 3; s++) {
        const [xb, yb] = mine(s);
        fl.tidy(() => loss(fsdp.forward(xb), yb).backward());
        await fsdp.syncGradients();
        opt.step();
        opt.zeroGrad();
      }
      if (!prefetch && inFlight.some((n) => n !== 0)) throw new Error(`prefetch: false left gathers in flight: ${inFlight}`);
      fsdp.gatherAll();
      trained.push(await valuesAsync(ps));
      fsdp.dispose();
    }
    close(trained[1], trained[0], 0, 0, 'FSDP without prefetch', false);
  }
  // Two backwards through one forward (retainGraph) before syncGradients add up, as in one process.
  {
    const ps = makeParams(0);
    const units = [0, 1, 2].map((i) => ({ parameters: () => [ps[2 * i], ps[2 * i + 1]], forward: layer(ps, i) }));
    const fsdp = await FullyShardedDataParallel.create(units);
    const [xb, yb] = mine(0);
    const grads = async () => valuesAsync(fsdp.parameters().map((t) => t.grad!));
    fl.tidy(() => loss(fsdp.forward(xb), yb).backward());
    await fsdp.syncGradients();
    const once = await grads();
    for (const t of fsdp.parameters()) {
      t.grad?.dispose();
      t.grad = null;
    }
    fl.tidy(() => {
      const l = loss(fsdp.forward(xb), yb);
      l.backward({ retainGraph: true });
      l.backward();
    });
    await fsdp.syncGradients();
    close(
      await grads(),
      once.map((v) => 2 * v),
      1e-5,
      1e-5,
      'FSDP gradients of two backwards',
      false,
    );
    fsdp.dispose();
  }
  // A parameter that gets no gradient (the first unit's bias, which its forward leaves out) is not
  // stepped: its block gets no gradient, so Adam's weight decay and moments leave it, as in one process.
  {
    const a = makeParams(0),
      b = makeParams(0);
    const f = (ps: fl.Tensor[], i: number) => (h: fl.Tensor) => (i === 0 ? h.matmul(ps[0]).relu() : layer(ps, i)(h));
    const plainOpt = new fl.optim.Adam(a, { lr: LR, weightDecay: 0.1 });
    const units = [0, 1, 2].map((i) => ({ parameters: () => [b[2 * i], b[2 * i + 1]], forward: f(b, i) }));
    const fsdp = await FullyShardedDataParallel.create(units);
    const opt = new fl.optim.Adam(fsdp.parameters(), { lr: LR, weightDecay: 0.1 });
    for (let s = 0; s < 3; s++) {
      fl.tidy(() => loss(f(a, 2)(f(a, 1)(f(a, 0)(x.narrow(0, s * BATCH, BATCH)))), y.narrow(0, s * BATCH, BATCH)).backward());
      plainOpt.step();
      plainOpt.zeroGrad();
      const [xb, yb] = mine(s);
      fl.tidy(() => loss(fsdp.forward(xb), yb).backward());
      await fsdp.syncGradients();
      if (fsdp.parameters()[1].grad) throw new Error('FSDP: the unused bias got a gradient block');
      opt.step();
      opt.zeroGrad();
    }
    if (plainOpt.state.get(a[1])) throw new Error('the plain optimizer stepped the unused bias');
    fsdp.gatherAll();
    close(await valuesAsync(b), await valuesAsync(a), 1e-4, 1e-4, 'FSDP with a parameter without gradient', false);
    close(await valuesAsync([b[1]]), await valuesAsync([makeParams(0)[1]]), 0, 0, 'the parameter without gradient', false);
    fsdp.dispose();
  }
  if (process.env.ZERO_LOAD) {
    // FSDP blocks saved by another world size: parameters and Adam state come back re-split.
    const ps = makeParams(0.7);
    const units = [0, 1, 2].map((i) => ({ parameters: () => [ps[2 * i], ps[2 * i + 1]], forward: layer(ps, i) }));
    const fsdp = await FullyShardedDataParallel.create(units);
    const opt = new fl.optim.Adam(fsdp.parameters(), { lr: 1 });
    await fsdp.loadSharded(`${process.env.ZERO_LOAD}/fsdp`, { optimizer: opt });
    if (opt.paramGroups[0].lr !== LR) throw new Error(`FSDP load: lr ${opt.paramGroups[0].lr}`);
    const st = opt.state.get(fsdp.parameters()[0])!;
    if (st.step !== STEPS) throw new Error(`FSDP load: step ${st.step}`);
    // Each parameter is sharded on its own: block 0 is this rank's part of the first weight's.
    const refFlat = await valuesAsync([refState.state[0].expAvg as fl.Tensor]);
    const blk = Math.ceil(refFlat.length / N);
    const mineRef = refFlat.slice(pg.rank * blk, (pg.rank + 1) * blk);
    close((await valuesAsync([st.expAvg as fl.Tensor])).slice(0, mineRef.length), mineRef, 1e-5, 1e-5, 'FSDP loaded expAvg block', false);
    fsdp.gatherAll();
    close(await valuesAsync(ps), want, 1e-4, 1e-4, 'FSDP parameters loaded from another world size', false);
    fsdp.dispose();
  }

  await memoryChecks(N);

  // Bad options.
  await expectCode('not an optimizer class', 'ERR_ARG', () => new ZeroRedundancyOptimizer(p1, Object as never, {}));
  await expectCode(
    'unknown hyper-parameter',
    'ERR_ARG',
    () => new ZeroRedundancyOptimizer(p1, fl.optim.SGD, { lr: 0.1, betas: [0.9, 0.9] } as never),
  );
  await expectCode('zeroStage 3 on DDP without units', 'ERR_ARG', () =>
    DistributedDataParallel.create({ parameters: () => p1 }, forward(p1), { zeroStage: 3 }),
  );
  await expectCode('zeroStage 2 with compression', 'ERR_ARG', () =>
    DistributedDataParallel.create({ parameters: () => p1 }, forward(p1), { zeroStage: 2, compression: 'bf16' }),
  );
  await expectCode('zeroStage 4', 'ERR_RANGE', () =>
    DistributedDataParallel.create({ parameters: () => p1 }, forward(p1), { zeroStage: 4 as never }),
  );
  {
    const d2 = await DistributedDataParallel.create({ parameters: () => p1 }, forward(p1), { zeroStage: 2 });
    const z2 = new ZeroRedundancyOptimizer(d2, fl.optim.SGD, { lr: 0.1 });
    await expectCode('zeroStage 2 step without syncGradients', 'ERR_ARG', () => z2.step());
    z2.dispose();
    d2.dispose();
  }
  const plain = await DistributedDataParallel.create({ parameters: () => p1 }, forward(p1));
  await expectCode('ZeRO over a DDP without zeroStage', 'ERR_ARG', () => new ZeroRedundancyOptimizer(plain, fl.optim.Adam, {}));
  plain.dispose();
  await expectCode('a state dict of another model', 'ERR_STATE_DICT', () =>
    zro.loadStateDict({ state: {}, paramGroups: [{ lr: 1, params: [0, 1] }] }),
  );
  await expectCode('FSDP without units', 'ERR_ARG', () => FullyShardedDataParallel.create([]));
  {
    // FSDP runs the children in order: a parameter of the model's own would never be used.
    const own = new fl.nn.Sequential(new fl.nn.Linear(3, 3)).to(device);
    (own as unknown as { scale: fl.nn.Parameter }).scale = new fl.nn.Parameter(fl.ones([3], on()));
    await expectCode('FSDP of a model with parameters of its own', 'ERR_ARG', () => FullyShardedDataParallel.create(own));
  }

  await destroyProcessGroup();
  console.log(`rank ${pg.rank}: ok (${backend}, ${device})`);
}

/** Per-rank optimizer state (stage 1), gradients (stage 2) and parameters (stage 3) are ~1/N of the whole. */
async function memoryChecks(N: number): Promise<void> {
  const P = 256 * 256 + 256 * 3;
  const big = () => {
    fl.manualSeed(5);
    return [fl.keep(dev(fl.randn([256, 256], { std: 0.05 }))).requiresGrad_(), fl.keep(dev(fl.randn([256, 3]))).requiresGrad_()];
  };
  const x = fl.keep(dev(fl.randn([4, 256])));
  const within = (what: string, got: number, want: number) => {
    if (Math.abs(got - want) > 0.05 * want + 4096) throw new Error(`${what}: ${got} bytes, expected about ${want}`);
  };
  // Stage 1: Adam's two moments, plus the rank's block of the parameters, are 3/N of the model.
  {
    const ps = big();
    const before = await bytes();
    const opt = new ZeroRedundancyOptimizer(ps, fl.optim.Adam, { lr: 1e-3 });
    fl.tidy(() => x.matmul(ps[0]).matmul(ps[1]).square().mean().backward());
    const withGrads = await bytes();
    await opt.step();
    opt.zeroGrad();
    within('ZeRO-1 optimizer state + parameter block per rank', (await bytes()) - before, (3 * P * 4) / N);
    within('full gradients before the step', withGrads - before, P * 4 + (P * 4) / N);
    opt.dispose();
    for (const p of ps) p.dispose();
  }
  // Stage 2: after syncGradients only this rank's gradient block is held.
  {
    const ps = big();
    const ddp = await DistributedDataParallel.create({ parameters: () => ps }, (t: fl.Tensor) => t.matmul(ps[0]).matmul(ps[1]), {
      zeroStage: 2,
    });
    const before = await bytes();
    fl.tidy(() => ddp.forward(x).square().mean().backward());
    await ddp.syncGradients();
    within('ZeRO-2 gradient bytes per rank', (await bytes()) - before, (P * 4) / N);
    ddp.dispose();
    for (const p of ps) p.dispose();
  }
  // Stage 3: between steps only the parameter blocks are held. (The first unit has no parameters:
  // backward must still reach the units after it.)
  {
    const ps = big();
    const before = await bytes();
    const units = [
      { parameters: () => [], forward: (t: fl.Tensor) => t.mul(1) },
      { parameters: () => [ps[0]], forward: (t: fl.Tensor) => t.matmul(ps[0]) },
      { parameters: () => [ps[1]], forward: (t: fl.Tensor) => t.matmul(ps[1]) },
    ];
    const fsdp = await FullyShardedDataParallel.create(units);
    within('ZeRO-3 parameter bytes per rank', (await bytes()) - before + P * 4, (P * 4) / N);
    fl.tidy(() => fsdp.forward(x).square().mean().backward());
    await fsdp.syncGradients();
    within('ZeRO-3 parameter + gradient bytes per rank after backward', (await bytes()) - before + P * 4, (2 * P * 4) / N);
    fsdp.dispose();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
