/**
 * DDP zeroStage 3 on N real ranks: an nn.Module whose forward calls its children out of order
 * (a residual block, units in a ModuleList, one child never called, one child with a parameter its
 * forward does not use), trained 10 Adam steps by ZeroRedundancyOptimizer(ddp, Adam) with each rank
 * on its part of every batch, must match one process training on whole batches — the parameters
 * without a gradient untouched, as there — and every rank must end with identical parameters.
 * Then: parameters, gradients and optimizer state per rank are ~1/N of the model (fl.memory()),
 * sharded checkpoints save (ZERO3_SAVE) and load into another world size (ZERO3_LOAD), and misuse
 * fails with coded errors.
 */
import * as fl from '../../../lib/index';
import { initProcessGroup, destroyProcessGroup } from '../../../lib/distributed/index';
import { bytes, expectCode, loss } from './zero_checks';
import { close } from '../../helpers/reference';
import { values, valuesAsync } from '../../helpers/values';
import { DistributedDataParallel } from '../../../lib/parallel/ddp';
import { ZeroRedundancyOptimizer } from '../../../lib/parallel/zero/index';
import { backend, dev, device, on } from './backend';

const { nn } = fl;
const STEPS = 10,
  BATCH = 24,
  LR = 0.01;

/** A child with a parameter its forward never uses: it gets no gradient. */
class Gated extends nn.Module {
  w = new nn.Parameter(fl.randn([7, 7], { std: 0.3 }));
  spare = new nn.Parameter(fl.randn([7], { std: 0.3 }));
  forward(x: fl.Tensor): fl.Tensor {
    return x.matmul(this.w);
  }
}

class Net extends nn.Module {
  inp = new nn.Linear(8, 13);
  blocks = new nn.ModuleList([new nn.Linear(13, 13), new nn.Linear(13, 7)]);
  gate = new Gated();
  unused = new nn.Linear(7, 3);
  head = new nn.Linear(7, 1);
  forward(x: fl.Tensor): fl.Tensor {
    const h = this.inp.forward(x).relu();
    const [b0, b1] = [...this.blocks.children()] as fl.nn.Linear[];
    const r = b0.forward(h).tanh().add(h); // residual: inp's output is used twice
    return this.head.forward(this.gate.forward(b1.forward(r)).tanh());
  }
}

function makeNet(seed: number): Net {
  fl.manualSeed(seed);
  return new Net().to(device);
}

async function main() {
  const pg = await initProcessGroup({ backend, timeoutMs: 30_000 });
  const N = pg.size,
    per = BATCH / N;
  fl.manualSeed(99);
  const x = fl.keep(dev(fl.randn([STEPS * BATCH, 8])));
  const y = fl.keep(dev(fl.randn([STEPS * BATCH, 1])));
  const mine = (s: number) => [x.narrow(0, s * BATCH + pg.rank * per, per), y.narrow(0, s * BATCH + pg.rank * per, per)];

  // Reference: one process, whole batches, a plain Adam with weight decay.
  const ref = makeNet(7);
  const refOpt = new fl.optim.Adam(ref.parameters(), { lr: LR, weightDecay: 0.01 });
  const initial = await valuesAsync(ref.parameters());
  for (let s = 0; s < STEPS; s++) {
    fl.tidy(() => loss(ref.forward(x.narrow(0, s * BATCH, BATCH)), y.narrow(0, s * BATCH, BATCH)).backward());
    refOpt.step();
    refOpt.zeroGrad();
  }
  const want = await valuesAsync(ref.parameters());
  const refState = refOpt.stateDict();
  // The parameters without a gradient were left alone by the plain optimizer.
  const untouched = [ref.gate.spare, ref.unused.weight, ref.unused.bias!];
  for (const t of untouched) if (refState.state[ref.parameters().indexOf(t)]) throw new Error('reference stepped an unused parameter');

  // zeroStage 3: rank 0's values win (the others start perturbed).
  const net = makeNet(7);
  if (pg.rank !== 0) fl.noGrad(() => net.parameters().forEach((p) => p.add_(0.3)));
  const ddp = await DistributedDataParallel.create(net, (t: fl.Tensor) => net.forward(t), { zeroStage: 3 });
  const opt = new ZeroRedundancyOptimizer(ddp, fl.optim.Adam, { lr: LR, weightDecay: 0.01 });
  if (net.parameters().some((p) => p.numel() !== 0)) throw new Error('zeroStage 3 kept a whole parameter after create');
  for (let s = 0; s < STEPS; s++) {
    const [xb, yb] = mine(s);
    fl.tidy(() => loss(ddp.forward(xb), yb).backward());
    if (s === 0) {
      // The units every parameter of which got its gradient are reduced and freed during backward.
      const done = [net.inp, net.head, ...net.blocks.children()].flatMap((m) => m.parameters());
      if (done.some((p) => p.numel() !== 0 || (p.grad && p.grad.numel() !== 0)))
        throw new Error('zeroStage 3 kept a gathered parameter or its gradient after backward');
      await expectCode('forward before syncGradients', 'ERR_AUTOGRAD', () => ddp.forward(xb));
      await expectCode('step before syncGradients', 'ERR_ARG', () => opt.step());
    }
    await ddp.syncGradients();
    if (s === 0 && net.parameters().some((p) => p.numel() !== 0 || p.grad))
      throw new Error('zeroStage 3 kept a gathered parameter or a gradient after syncGradients');
    await opt.step();
    opt.zeroGrad();
  }
  ddp.gatherAll();
  const got = await valuesAsync(net.parameters());
  close(got, want, 1e-4, 1e-4, 'DDP zeroStage 3 after 10 Adam steps', false);
  // Untouched exactly: no gradient, no weight decay, no Adam step.
  const ps = net.parameters();
  for (const t of [net.gate.spare, net.unused.weight, net.unused.bias!]) {
    const i = ps.indexOf(t);
    const at = ps.slice(0, i).reduce((a, p) => a + p.numel(), 0);
    close(await valuesAsync([t]), initial.slice(at, at + t.numel()), 0, 0, 'a parameter without gradient', false);
  }
  {
    const t = fl.tensor(got, on());
    await pg.broadcast(t, 0).wait();
    const r0 = await t.data();
    for (let i = 0; i < got.length; i++) if (r0[i] !== got[i]) throw new Error(`rank ${pg.rank} differs from rank 0 at ${i}`);
  }
  // Its consolidated state numbers the parameters in the model's order, as the plain optimizer's.
  const csd = await opt.consolidatedStateDict();
  for (const [i, st] of Object.entries(refState.state)) {
    if (csd.state[Number(i)]?.step !== st.step) throw new Error(`consolidated step of parameter ${i}: ${csd.state[Number(i)]?.step}`);
    close(
      await valuesAsync([csd.state[Number(i)].expAvgSq as fl.Tensor]),
      await valuesAsync([st.expAvgSq as fl.Tensor]),
      1e-5,
      1e-5,
      `consolidated expAvgSq of parameter ${i}`,
      false,
    );
  }
  // Evaluation outside ddp.forward. After gatherAll(), one rank alone may run the model (no collective).
  const evalWant = fl.keep(fl.noGrad(() => ref.forward(x.narrow(0, 0, 5))));
  if (pg.rank === 0)
    fl.noGrad(() => close(values(net.forward(x.narrow(0, 0, 5))), values(evalWant), 1e-4, 1e-4, 'rank 0 alone, after gatherAll', false));
  // Resharded (as after a step), every rank's call gathers each unit on its own and frees it after.
  ddp.zeroReshard();
  fl.noGrad(() => close(values(net.forward(x.narrow(0, 0, 5))), values(evalWant), 1e-4, 1e-4, 'every rank, resharded', false));
  if (net.parameters().some((p) => p.numel() !== 0)) throw new Error('a call outside ddp.forward left a unit gathered');
  if (process.env.ZERO3_SAVE) await opt.saveSharded(process.env.ZERO3_SAVE);
  opt.dispose();
  ddp.dispose();
  if (typeof net.inp.forward !== 'function' || Object.hasOwn(net.inp, 'forward')) throw new Error('dispose left a wrapped forward');

  if (process.env.ZERO3_LOAD) {
    // Blocks saved by another world size: parameters and Adam state come back re-split.
    const other = makeNet(8);
    const d = await DistributedDataParallel.create(other, (t: fl.Tensor) => other.forward(t), { zeroStage: 3 });
    const o = new ZeroRedundancyOptimizer(d, fl.optim.Adam, { lr: 1 });
    await o.loadSharded(process.env.ZERO3_LOAD);
    if (o.paramGroups[0].lr !== LR) throw new Error(`loaded lr ${o.paramGroups[0].lr}`);
    const sd = await o.consolidatedStateDict();
    for (const [i, st] of Object.entries(refState.state))
      close(
        await valuesAsync([sd.state[Number(i)].expAvg as fl.Tensor]),
        await valuesAsync([st.expAvg as fl.Tensor]),
        1e-5,
        1e-5,
        `loaded expAvg of parameter ${i}`,
        false,
      );
    // One more step from the loaded state matches the reference's eleventh.
    const [xb, yb] = mine(0);
    fl.tidy(() => loss(d.forward(xb), yb).backward());
    await d.syncGradients();
    await o.step();
    fl.tidy(() => loss(ref.forward(x.narrow(0, 0, BATCH)), y.narrow(0, 0, BATCH)).backward());
    refOpt.step();
    refOpt.zeroGrad();
    d.gatherAll();
    close(
      await valuesAsync(other.parameters()),
      await valuesAsync(ref.parameters()),
      1e-4,
      1e-4,
      'a step after loading from another world size',
      false,
    );
    o.dispose();
    d.dispose();
  }

  // 3 SGD steps (momentum 0.9) of `d` with `opt` against one process on a copy of the same net.
  const sgdSteps = async (
    what: string,
    seed: number,
    wrap: (net: Net) => Promise<DistributedDataParallel<[fl.Tensor], fl.Tensor>>,
    makeOpt: (d: DistributedDataParallel<[fl.Tensor], fl.Tensor>) => { step(): unknown; zeroGrad(): void; dispose?(): void },
  ) => {
    const plain = makeNet(seed),
      sharded = makeNet(seed);
    const plainOpt = new fl.optim.SGD(plain.parameters(), { lr: 0.1, momentum: 0.9 });
    const d = await wrap(sharded);
    const o = makeOpt(d);
    for (let s = 0; s < 3; s++) {
      fl.tidy(() => loss(plain.forward(x.narrow(0, s * BATCH, BATCH)), y.narrow(0, s * BATCH, BATCH)).backward());
      plainOpt.step();
      plainOpt.zeroGrad();
      const [xb, yb] = mine(s);
      fl.tidy(() => loss(d.forward(xb), yb).backward());
      await d.syncGradients();
      await o.step();
      o.zeroGrad();
    }
    d.gatherAll();
    close(await valuesAsync(sharded.parameters()), await valuesAsync(plain.parameters()), 1e-4, 1e-4, what, false);
    o.dispose?.();
    d.dispose();
  };

  // The units option: a hand-written model (no children()) whose units are listed.
  const kids = (n: Net) => [n.inp, ...(n.blocks.children() as Iterable<fl.nn.Module>), n.gate, n.unused, n.head];
  await sgdSteps(
    'zeroStage 3 with the units option, SGD with momentum',
    3,
    (net) =>
      DistributedDataParallel.create({ parameters: () => net.parameters() }, (t: fl.Tensor) => net.forward(t), {
        zeroStage: 3,
        units: kids(net),
      }),
    (d) => new ZeroRedundancyOptimizer(d, fl.optim.SGD, { lr: 0.1, momentum: 0.9 }),
  );

  // A plain optimizer over ddp.parameters() (this rank's blocks, as FSDP's) trains as in one process.
  await sgdSteps(
    'zeroStage 3, a plain SGD over ddp.parameters()',
    4,
    (net) => DistributedDataParallel.create(net, (t: fl.Tensor) => net.forward(t), { zeroStage: 3 }),
    (d) => {
      const blocks = d.parameters();
      if (blocks.some((b) => d.module.parameters().includes(b)))
        throw new Error('zeroStage 3 parameters() returned the emptied module parameters');
      return new fl.optim.SGD(blocks, { lr: 0.1, momentum: 0.9 });
    },
  );

  await memoryChecks(N);

  // Misuse.
  const n2 = makeNet(7);
  const mk = (opts: object, model: object = n2) =>
    DistributedDataParallel.create(model as fl.nn.Module, (t: fl.Tensor) => n2.forward(t), opts as never);
  await expectCode('bucketCapMB with zeroStage 3', 'ERR_ARG', () => mk({ zeroStage: 3, bucketCapMB: 1 }));
  await expectCode('compression with zeroStage 3', 'ERR_ARG', () => mk({ zeroStage: 3, compression: 'bf16' }));
  await expectCode('units with zeroStage 2', 'ERR_ARG', () => mk({ zeroStage: 2, units: [n2.head] }));
  await expectCode('a unit that is not a module', 'ERR_ARG', () => mk({ zeroStage: 3, units: [n2.inp, 3] }));
  {
    const d = await mk({ zeroStage: 3 });
    await expectCode('noSync with zeroStage 3', 'ERR_ARG', () => d.noSync(() => 0));
    d.dispose();
    const plain = await mk({});
    await expectCode('gatherAll without zeroStage 3', 'ERR_ARG', () => plain.gatherAll());
    plain.dispose();
  }

  await destroyProcessGroup();
  console.log(`rank ${pg.rank}: ok (${backend}, ${device})`);
}

/** Parameters, then gradients, then Adam's two moments held per rank are each ~1/N of the model's. */
async function memoryChecks(N: number): Promise<void> {
  fl.manualSeed(5);
  const model = new nn.Sequential(new nn.Linear(256, 256), new nn.Tanh(), new nn.Linear(256, 256), new nn.Linear(256, 3)).to(device);
  const P = 256 * 256 + 256 + 256 * 256 + 256 + 256 * 3 + 3;
  const x = fl.keep(dev(fl.randn([4, 256])));
  const within = (what: string, got: number, want: number) => {
    if (Math.abs(got - want) > 0.05 * want + 4096) throw new Error(`${what}: ${got} bytes, expected about ${want}`);
  };
  const before = (await bytes()) - P * 4; // the model's whole parameters are part of what is live now
  const ddp = await DistributedDataParallel.create(model, (t: fl.Tensor) => model.forward(t), { zeroStage: 3 });
  within('ZeRO-3 parameter bytes per rank', (await bytes()) - before, (P * 4) / N);
  const opt = new ZeroRedundancyOptimizer(ddp, fl.optim.Adam, { lr: 1e-3 });
  fl.tidy(() => ddp.forward(x).square().mean().backward());
  await ddp.syncGradients();
  within('ZeRO-3 parameter + gradient bytes per rank', (await bytes()) - before, (2 * P * 4) / N);
  await opt.step();
  opt.zeroGrad();
  within('ZeRO-3 parameter + Adam state bytes per rank', (await bytes()) - before, (3 * P * 4) / N);
  opt.dispose();
  ddp.dispose();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
