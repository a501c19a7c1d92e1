/** SGD with momentum, dampening, Nesterov, weight decay and maximize; one fused native call per group. */
import { native } from '../native';
import type { Tensor } from '../tensor';
import { keep } from '../memory';
import { zerosLike } from '../ops/creation';
import { Optimizer, type OptimizerSpec, type ParamsArg } from './optimizer';
import { argError, checkOptions } from '../errors';
import { checkBool, checkNumber } from '../validate';
import { bumpVersions } from '../autograd/version';

export interface SGDOptions {
  lr: number;
  momentum: number;
  dampening: number;
  weightDecay: number;
  nesterov: boolean;
  /** Ascend the objective instead of descending it (the gradient's sign is flipped), as PyTorch. */
  maximize: boolean;
}

const SGD_SPEC: OptimizerSpec<SGDOptions> = {
  keys: ['lr', 'momentum', 'dampening', 'weightDecay', 'nesterov', 'maximize'],
  check(op, h, at) {
    checkNumber(op, `${at}lr`, h.lr, { min: 0 });
    checkNumber(op, `${at}momentum`, h.momentum, { min: 0 });
    checkNumber(op, `${at}dampening`, h.dampening);
    checkNumber(op, `${at}weightDecay`, h.weightDecay, { min: 0 });
    checkBool(op, `${at}nesterov`, h.nesterov);
    checkBool(op, `${at}maximize`, h.maximize);
    if (h.nesterov && (h.momentum <= 0 || h.dampening !== 0))
      throw argError(
        op,
        `${at}nesterov momentum requires a momentum > 0 and zero dampening, got momentum ${h.momentum}, dampening ${h.dampening}`,
      );
  },
  state: { momentumBuffer: 'tensor' },
  requiredState: [],
};

export class SGD extends Optimizer<SGDOptions> {
  constructor(params: ParamsArg<SGDOptions>, options: Partial<SGDOptions> = {}) {
    const o = checkOptions('SGD', options, SGD_SPEC.keys);
    super(params, { lr: 1e-3, momentum: 0, dampening: 0, weightDecay: 0, nesterov: false, maximize: false, ...o }, SGD_SPEC);
  }

  step(): void {
    this.paramGroups.forEach((g, gi) => {
      const ps = this.stepParams('SGD.step', gi);
      // A momentum buffer's first step copies the gradient, later ones blend: one call for each kind
      // and device (a model placed across devices steps each device's parameters there).
      const batches = new Map<string, { first: boolean; ps: Tensor[]; gs: Tensor[]; bufs: Tensor[] }>();
      for (const p of ps) {
        let first = true;
        let buf: Tensor | null = null;
        if (g.momentum !== 0) {
          let s = this.state.get(p);
          if (!s) this.state.set(p, (s = {}));
          first = !s.momentumBuffer;
          if (first) s.momentumBuffer = keep(zerosLike(p));
          buf = s.momentumBuffer as Tensor;
        }
        const key = `${first}/${p.device}`;
        let b = batches.get(key);
        if (!b) batches.set(key, (b = { first, ps: [], gs: [], bufs: [] }));
        b.ps.push(p);
        b.gs.push(p.grad as Tensor);
        if (buf) b.bufs.push(buf);
      }
      for (const b of batches.values()) {
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
        );
        bumpVersions(`${this.constructor.name}.step`, b.ps);
      }
    });
  }
}
