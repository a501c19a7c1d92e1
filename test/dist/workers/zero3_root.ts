/**
 * DDP zeroStage 3 with trainable parameters in no unit (PyTorch FSDP's root unit): a model with
 * parameters of its own, used at the start (their gradients arrive last in backward) and at the
 * end (first), and a units option that lists only some children, train 5 SGD steps (momentum,
 * weight decay) as one process does on whole batches. The root is gathered for the forward and
 * backward only: freed after backward, after a no-grad forward, and a forward with no backward
 * does not hold up the next one. The consolidated optimizer state numbers the root's parameters in
 * the model's order, as the plain optimizer's state dict does.
 */
import * as fl from '../../../lib/index';
import { initProcessGroup, destroyProcessGroup } from '../../../lib/distributed/index';
import { loss } from './zero_checks';
import { close } from '../../helpers/reference';
import { valuesAsync } from '../../helpers/values';
import { DistributedDataParallel } from '../../../lib/parallel/ddp';
import { ZeroRedundancyOptimizer } from '../../../lib/parallel/zero/index';
import { backend, dev, device } from './backend';

const { nn } = fl;
const STEPS = 5,
  BATCH = 12;

class RootNet extends nn.Module {
  scale = new nn.Parameter(fl.randn([8], { std: 0.5 }).add(1));
  inp = new nn.Linear(8, 13);
  mid = new nn.Linear(13, 6);
  head = new nn.Linear(6, 1);
  shift = new nn.Parameter(fl.randn([1]));
  forward(x: fl.Tensor): fl.Tensor {
    const h = this.inp.forward(x.mul(this.scale)).tanh();
    return this.head.forward(this.mid.forward(h).tanh()).add(this.shift);
  }
}

function makeNet(seed: number): RootNet {
  fl.manualSeed(seed);
  return new RootNet().to(device);
}

async function main() {
  const pg = await initProcessGroup({ backend, timeoutMs: 30_000 });
  const N = pg.size,
    per = BATCH / N;
  fl.manualSeed(42);
  const x = fl.keep(dev(fl.randn([STEPS * BATCH, 8])));
  const y = fl.keep(dev(fl.randn([STEPS * BATCH, 1])));
  const sgd = { lr: 0.05, momentum: 0.9, weightDecay: 0.01 };

  for (const [what, units] of [
    ['the model’s own parameters in the root unit', undefined],
    ['units listing inp and head only: mid and the model’s own parameters in the root unit', (n: RootNet) => [n.inp, n.head]],
  ] as const) {
    const plain = makeNet(3),
      net = makeNet(3);
    if (pg.rank !== 0) fl.noGrad(() => net.parameters().forEach((p) => p.add_(0.2)));
    const plainOpt = new fl.optim.SGD(plain.parameters(), sgd);
    const ddp = await DistributedDataParallel.create(net, (t: fl.Tensor) => net.forward(t), {
      zeroStage: 3,
      ...(units ? { units: units(net) } : {}),
    });
    const opt = new ZeroRedundancyOptimizer(ddp, fl.optim.SGD, sgd);
    const root = units ? [net.scale, net.shift, ...net.mid.parameters()] : [net.scale, net.shift];
    if (net.parameters().some((p) => p.numel() !== 0)) throw new Error(`${what}: a parameter was kept whole after create`);
    for (let s = 0; s < STEPS; s++) {
      fl.tidy(() => loss(plain.forward(x.narrow(0, s * BATCH, BATCH)), y.narrow(0, s * BATCH, BATCH)).backward());
      plainOpt.step();
      plainOpt.zeroGrad();
      const xb = x.narrow(0, s * BATCH + pg.rank * per, per),
        yb = y.narrow(0, s * BATCH + pg.rank * per, per);
      if (s === 1) {
        // A forward with no backward, then one without grad: neither holds up the next forward, and the root is freed.
        fl.tidy(() => ddp.forward(xb));
        fl.noGrad(() => fl.tidy(() => ddp.forward(xb)));
        if (root.some((p) => p.numel() !== 0)) throw new Error(`${what}: a no-grad forward left the root gathered`);
      }
      fl.tidy(() => {
        const out = ddp.forward(xb);
        if (root.some((p) => p.numel() === 0)) throw new Error(`${what}: the root is not gathered after forward`);
        loss(out, yb).backward();
      });
      if (root.some((p) => p.numel() !== 0)) throw new Error(`${what}: the root is still gathered after backward`);
      await ddp.syncGradients();
      await opt.step();
      opt.zeroGrad();
    }
    // The consolidated state numbers the root's parameters in the model's order, as the plain optimizer's.
    const csd = await opt.consolidatedStateDict();
    const ref = plainOpt.stateDict();
    for (const p of root) {
      const i = net.parameters().indexOf(p);
      close(
        await valuesAsync([csd.state[i].momentumBuffer as fl.Tensor]),
        await valuesAsync([ref.state[i].momentumBuffer as fl.Tensor]),
        1e-4,
        1e-4,
        `${what}: consolidated momentum of parameter ${i}`,
        false,
      );
    }
    ddp.gatherAll();
    close(await valuesAsync(net.parameters()), await valuesAsync(plain.parameters()), 1e-4, 1e-4, what, false);
    opt.dispose();
    ddp.dispose();
  }
  await destroyProcessGroup();
  console.log(`rank ${pg.rank}: ok (${backend}, ${device})`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
