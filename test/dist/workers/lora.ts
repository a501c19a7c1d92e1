/**
 * LoRA under data parallelism: a small GPT-2 with adapters on c_attn, c_proj and c_fc trains 6
 * AdamW steps, each rank on its slice of every batch, with DDP, ZeroRedundancyOptimizer (alone and
 * over DDP zeroStage 1 and 2) and DDP zeroStage 3 (default units and one unit per block); then
 * FullyShardedDataParallel on a chain of adapted Linear layers. Each must give the adapter weights
 * one process gets on whole batches, and on every rank: the frozen base weights bit-identical to
 * rank 0's initial ones (rank 1 starts from other base weights, which DDP's creation must replace),
 * no gradient on a frozen weight, and optimizer state (or a shard space) for the adapters only.
 */
import * as fl from '../../../lib/index';
import { initProcessGroup, destroyProcessGroup, type ProcessGroup } from '../../../lib/distributed/index';
import { DistributedDataParallel } from '../../../lib/parallel/ddp';
import { ZeroRedundancyOptimizer } from '../../../lib/parallel/zero/index';
import { FullyShardedDataParallel } from '../../../lib/parallel/zero/fsdp';
import { close } from '../../helpers/reference';
import { valuesAsync } from '../../helpers/values';
import { backend, dev, device } from './backend';

const { lora } = fl.nn;
const STEPS = 6,
  BATCH = 8,
  T = 12,
  VOCAB = 48;
const CONFIG = { vocab_size: VOCAB, n_positions: 16, n_embd: 32, n_layer: 2, n_head: 4 };
const ADAM = { lr: 1e-2, weightDecay: 0.01 };

/** The adapted model; rank ≠ 0 perturbs every weight, so only DDP's broadcast can make the ranks agree. */
function build(perturb: number): fl.models.GPT2 {
  fl.manualSeed(7);
  const m = new fl.models.GPT2(CONFIG, { device });
  lora.apply(m, { r: 4, alpha: 8, targets: ['c_attn', 'c_proj', 'c_fc'] });
  if (perturb) fl.noGrad(() => m.parameters().forEach((p) => p.add_(perturb)));
  return m;
}

const frozenOf = (m: fl.nn.Module) => m.parameters().filter((p) => !p.requiresGrad);

function data(): fl.Tensor {
  fl.manualSeed(99);
  return fl.keep(dev(fl.randint(0, VOCAB, [STEPS * BATCH, T + 1], { dtype: 'i64' })));
}

/** Mean next-token cross-entropy of rows [at, at + n) of `ids`. */
function lossOf(forward: (x: fl.Tensor) => fl.Tensor, ids: fl.Tensor, at: number, n: number): fl.Tensor {
  const rows = ids.narrow(0, at, n);
  const logits = forward(rows.narrow(1, 0, T));
  return fl.nn.functional.crossEntropy(logits.reshape([n * T, VOCAB]), rows.narrow(1, 1, T).reshape([n * T]));
}

async function sameOnAllRanks(pg: ProcessGroup, what: string, got: number[]): Promise<void> {
  const t = fl.tensor(got, { device });
  await pg.broadcast(t, 0).wait();
  const r0 = await t.data();
  for (let i = 0; i < got.length; i++) if (r0[i] !== got[i]) throw new Error(`${what}: rank ${pg.rank} differs from rank 0 at ${i}`);
}

/** What every parallel run must end with: the reference adapters, rank 0's untouched base, no frozen gradient. */
async function expectLikeReference(pg: ProcessGroup, what: string, m: fl.models.GPT2, want: number[], base: number[]) {
  close(await valuesAsync(lora.parameters(m)), want, 2e-4, 2e-4, `${what}: adapter weights`, false);
  const frozen = frozenOf(m);
  const mine = await valuesAsync(frozen);
  if (mine.length !== base.length || mine.some((v, i) => v !== base[i]))
    throw new Error(`${what}: the frozen base weights of rank ${pg.rank} are not rank 0's initial ones, bit for bit`);
  await sameOnAllRanks(pg, `${what}: adapters`, await valuesAsync(lora.parameters(m)));
  if (frozen.some((p) => p.grad)) throw new Error(`${what}: a frozen weight got a gradient`);
}

/** ZeRO's flat spaces hold exactly the adapters, and its local optimizer keeps state for its blocks only. */
function expectAdapterSpaces(what: string, m: fl.models.GPT2, spaces: readonly { params: fl.Tensor[] }[]): void {
  const adapters = new Set(lora.parameters(m));
  const held = spaces.flatMap((s) => s.params);
  if (held.length !== adapters.size || !held.every((p) => adapters.has(p)))
    throw new Error(`${what}: the shard spaces hold ${held.length} tensors, not the ${adapters.size} adapters alone`);
}

async function main() {
  const pg = await initProcessGroup({ backend, timeoutMs: 30_000 });
  const N = pg.size,
    per = BATCH / N;
  const ids = data();
  const perturb = pg.rank === 0 ? 0 : 0.25;

  // Reference: one process, whole batches, AdamW over every parameter (the frozen ones get no state).
  const ref = build(0);
  const base = await valuesAsync(frozenOf(ref));
  const refOpt = new fl.optim.AdamW(ref.parameters(), ADAM);
  for (let s = 0; s < STEPS; s++) {
    fl.tidy(() => lossOf((x) => ref.forward(x), ids, s * BATCH, BATCH).backward());
    refOpt.step();
    refOpt.zeroGrad();
  }
  const want = await valuesAsync(lora.parameters(ref));
  if (Object.keys(refOpt.stateDict().state).length !== lora.parameters(ref).length)
    throw new Error('the reference optimizer keeps state for frozen weights');
  const initial = await valuesAsync(lora.parameters(build(0)));
  if (initial.every((v, i) => v === want[i])) throw new Error('the reference adapters did not train');

  // DDP: buckets of adapter gradients only (a small cap: several buckets).
  {
    const m = build(perturb);
    const ddp = await DistributedDataParallel.create(m, (x: fl.Tensor) => m.forward(x), { bucketCapMB: 0.01 });
    if (ddp.bucketCount < 2) throw new Error(`DDP: expected several buckets, got ${ddp.bucketCount}`);
    const bucketed = ddp.bucketSizes.reduce((a, b) => a + b, 0);
    if (bucketed !== m.numParameters({ trainableOnly: true }))
      throw new Error(`DDP: ${bucketed} elements in buckets, the adapters have ${m.numParameters({ trainableOnly: true })}`);
    const opt = new fl.optim.AdamW(m.parameters(), ADAM);
    for (let s = 0; s < STEPS; s++) {
      fl.tidy(() => lossOf((x) => ddp.forward(x), ids, s * BATCH + pg.rank * per, per).backward());
      await ddp.syncGradients();
      opt.step();
      opt.zeroGrad();
    }
    await expectLikeReference(pg, 'DDP', m, want, base);
    const adapters = new Set<fl.Tensor>(lora.parameters(m));
    if (opt.state.size !== adapters.size || ![...opt.state.keys()].every((p) => adapters.has(p)))
      throw new Error(`DDP: the optimizer keeps state for ${opt.state.size} tensors, not the ${adapters.size} adapters alone`);
    ddp.dispose();
  }

  // ZeroRedundancyOptimizer alone (stage 1, local gradients reduce-scattered in step()).
  {
    const m = build(0);
    const opt = new ZeroRedundancyOptimizer(m.parameters(), fl.optim.AdamW, ADAM);
    expectAdapterSpaces('ZeroRedundancyOptimizer', m, opt.spaces);
    for (let s = 0; s < STEPS; s++) {
      fl.tidy(() => lossOf((x) => m.forward(x), ids, s * BATCH + pg.rank * per, per).backward());
      await opt.step();
      opt.zeroGrad();
    }
    await expectLikeReference(pg, 'ZeroRedundancyOptimizer', m, want, base);
  }

  // DDP zeroStage 1 and 2 with ZeroRedundancyOptimizer over its buckets.
  for (const stage of [1, 2] as const) {
    const m = build(perturb);
    const ddp = await DistributedDataParallel.create(m, (x: fl.Tensor) => m.forward(x), { zeroStage: stage, bucketCapMB: 0.01 });
    const opt = new ZeroRedundancyOptimizer(ddp, fl.optim.AdamW, ADAM);
    expectAdapterSpaces(`DDP zeroStage ${stage}`, m, opt.spaces);
    for (let s = 0; s < STEPS; s++) {
      fl.tidy(() => lossOf((x) => ddp.forward(x), ids, s * BATCH + pg.rank * per, per).backward());
      await ddp.syncGradients();
      if (stage === 2 && m.parameters().some((p) => p.grad)) throw new Error('zeroStage 2 kept a full gradient');
      await opt.step();
      opt.zeroGrad();
    }
    await expectLikeReference(pg, `DDP zeroStage ${stage}`, m, want, base);
    const csd = await opt.consolidatedStateDict();
    if (Object.keys(csd.state).length !== lora.parameters(m).length)
      throw new Error(`DDP zeroStage ${stage}: consolidated state for ${Object.keys(csd.state).length} tensors`);
    ddp.dispose();
  }

  // DDP zeroStage 3: the adapters sharded per unit; the frozen base stays whole on every rank.
  for (const [what, units] of [
    ['default units', undefined],
    ['one unit per block', (m: fl.models.GPT2) => [...m.transformer.h.children()] as fl.nn.Module[]],
  ] as const) {
    const m = build(perturb);
    const ddp = await DistributedDataParallel.create(m, (x: fl.Tensor) => m.forward(x), {
      zeroStage: 3,
      ...(units ? { units: units(m) as never } : {}),
    });
    const opt = new ZeroRedundancyOptimizer(ddp, fl.optim.AdamW, ADAM);
    expectAdapterSpaces(`DDP zeroStage 3, ${what}`, m, opt.spaces);
    if (lora.parameters(m).some((p) => p.numel() !== 0)) throw new Error(`DDP zeroStage 3, ${what}: an adapter was kept whole`);
    for (let s = 0; s < STEPS; s++) {
      fl.tidy(() => lossOf((x) => ddp.forward(x), ids, s * BATCH + pg.rank * per, per).backward());
      await ddp.syncGradients();
      await opt.step();
      opt.zeroGrad();
    }
    ddp.gatherAll();
    await expectLikeReference(pg, `DDP zeroStage 3, ${what}`, m, want, base);
    ddp.dispose();
  }

  // FullyShardedDataParallel on a chain: adapted Linear layers are units, the base weights stay whole.
  {
    const chain = (p: number) => {
      fl.manualSeed(11);
      const net = new fl.nn.Sequential(
        new fl.nn.Linear(8, 16),
        new fl.nn.Tanh(),
        new fl.nn.Linear(16, 16),
        new fl.nn.Tanh(),
        new fl.nn.Linear(16, 1),
      );
      lora.apply(net, { r: 2, alpha: 4, targets: ['0', '2', '4'] });
      // B ≠ 0 so that A trains from the first step, as in one process.
      fl.noGrad(() => lora.parameters(net).forEach((q) => q.add_(0.1)));
      if (p) fl.noGrad(() => net.parameters().forEach((q) => q.add_(p)));
      return net.to(device);
    };
    fl.manualSeed(5);
    const x = fl.keep(dev(fl.randn([STEPS * BATCH, 8])));
    const y = fl.keep(dev(fl.randn([STEPS * BATCH, 1])));
    const mse = (out: fl.Tensor, at: number, n: number) =>
      out
        .sub(y.narrow(0, at, n))
        .square()
        .mean();
    const plain = chain(0);
    const chainBase = await valuesAsync(frozenOf(plain));
    const plainOpt = new fl.optim.AdamW(plain.parameters(), ADAM);
    for (let s = 0; s < STEPS; s++) {
      fl.tidy(() => mse(plain.forward(x.narrow(0, s * BATCH, BATCH)), s * BATCH, BATCH).backward());
      plainOpt.step();
      plainOpt.zeroGrad();
    }
    const net = chain(perturb);
    const fsdp = await FullyShardedDataParallel.create(net);
    const opt = new fl.optim.AdamW(fsdp.parameters(), ADAM);
    if (fsdp.parameters().length !== lora.parameters(net).length)
      throw new Error(`FSDP: ${fsdp.parameters().length} sharded tensors, ${lora.parameters(net).length} adapters`);
    for (let s = 0; s < STEPS; s++) {
      const at = s * BATCH + pg.rank * per;
      fl.tidy(() => mse(fsdp.forward(x.narrow(0, at, per)), at, per).backward());
      await fsdp.syncGradients();
      opt.step();
      opt.zeroGrad();
    }
    fsdp.gatherAll();
    close(await valuesAsync(lora.parameters(net)), await valuesAsync(lora.parameters(plain)), 2e-4, 2e-4, 'FSDP: adapter weights', false);
    const frozen = await valuesAsync(frozenOf(net));
    if (frozen.some((v, i) => v !== chainBase[i]))
      throw new Error(`FSDP: the frozen base weights of rank ${pg.rank} are not rank 0's initial ones, bit for bit`);
    if (frozenOf(net).some((p) => p.grad)) throw new Error('FSDP: a frozen weight got a gradient');
    fsdp.dispose();
  }

  await destroyProcessGroup();
  console.log(`rank ${pg.rank} ok`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
