/** SGD with momentum, dampening, Nesterov, weight decay and maximize; one fused native call per group. */
import { native } from '../native';
import type { Tensor } from '../tensor';
import { Optimizer, type OptimizerSpec, type ParamsArg, hasMaster, masterOf, zeroState } from './optimizer';
import { nextDraw } from '../random';
import { argError, checkOptions } from '../errors';
import { checkBool, checkNumber } from '../validate';
import { bumpVersions } from '../dispatch/version';

export interface SGDOptions {
  lr: number;
  momentum: number;
  dampening: number;
  weightDecay: number;
  nesterov: boolean;
  /** Ascend the objective instead of descending it (the gradient's sign is flipped), as PyTorch. */
  maximize: boolean;
  /** bf16/f16 parameters only: round each updated f32 master to the parameter stochastically (default false). */
  stochasticRounding: boolean;
}

const SGD_SPEC: OptimizerSpec<SGDOptions> = {
  keys: ['lr', 'momentum', 'dampening', 'weightDecay', 'nesterov', 'maximize', 'stochasticRounding'],
  check(op, h, at) {
    checkNumber(op, `${at}lr`, h.lr, { min: 0 });
    checkNumber(op, `${at}momentum`, h.momentum, { min: 0 });
    checkNumber(op, `${at}dampening`, h.dampening);
    checkNumber(op, `${at}weightDecay`, h.weightDecay, { min: 0 });
    checkBool(op, `${at}nesterov`, h.nesterov);
    checkBool(op, `${at}maximize`, h.maximize);
    checkBool(op, `${at}stochasticRounding`, h.stochasticRounding);
    if (h.nesterov && (h.momentum <= 0 || h.dampening !== 0))
      throw argError(
        op,
        `${at}nesterov momentum requires a momentum > 0 and zero dampening, got momentum ${h.momentum}, dampening ${h.dampening}`,
      );
  },
  state: { momentumBuffer: 'tensor', masterParam: 'tensor' },
  requiredState: [],
};

export class SGD extends Optimizer<SGDOptions> {
  constructor(params: ParamsArg<SGDOptions>, options: Partial<SGDOptions> = {}) {
    const o = checkOptions('SGD', options, SGD_SPEC.keys);
    super(
      params,
      {
        lr: 1e-3,
        momentum: 0,
        dampening: 0,
        weightDecay: 0,
        nesterov: false,
        maximize: false,
        stochasticRounding: false,
        ...o,
      },
      SGD_SPEC,
    );
  }

  step(): void {
    this.transaction('SGD.step', () => {
      this.paramGroups.forEach((g, gi) => {
        const ps = this.stepParams('SGD.step', gi);
        // A momentum buffer's first step copies the gradient, later ones blend; f32/f64 parameters
        // update in place, bf16/f16 ones through f32 masters: one call for each kind and device (a
        // model placed across devices steps each device's parameters there).
        const batches = new Map<string, { first: boolean; ps: Tensor[]; gs: Tensor[]; bufs: Tensor[]; masters: Tensor[]; numel: number }>();
        for (const p of ps) {
          let first = true;
          let buf: Tensor | null = null;
          let s = this.state.get(p);
          if ((g.momentum !== 0 || hasMaster(p)) && !s) this.state.set(p, (s = {}));
          if (g.momentum !== 0 && s) {
            first = !s.momentumBuffer;
            if (first) s.momentumBuffer = zeroState(p);
            buf = s.momentumBuffer as Tensor;
          }
          const key = `${first}/${p.device}/${hasMaster(p)}`;
          let b = batches.get(key);
          if (!b) batches.set(key, (b = { first, ps: [], gs: [], bufs: [], masters: [], numel: 0 }));
          b.ps.push(p);
          b.gs.push(p.grad as Tensor);
          if (buf) b.bufs.push(buf);
          if (hasMaster(p) && s) b.masters.push(masterOf(p, s));
          b.numel += p.numel();
        }
        for (const b of batches.values()) {
          const sr = g.stochasticRounding && b.masters.length > 0;
          const draw = sr ? nextDraw(b.numel) : { seed: 0, offset: 0 };
          native.sgdStep(
            b.ps.map((t) => t.handle),
            b.gs.map((t) => t.handle),
            b.bufs.map((t) => t.handle),
            g.lr,
            g.momentum,
            g.dampening,
            g.weightDecay,
            g.nesterov,
            b.first,
            g.maximize,
            b.masters.map((t) => t.handle),
            sr,
            draw.seed,
            draw.offset,
          );
          bumpVersions(`${this.constructor.name}.step`, b.ps);
        }
      });
    });
  }
}
