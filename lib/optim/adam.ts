/** Adam and AdamW (decoupled weight decay) with bias correction; one fused native call per group. */
import { native } from '../native';
import type { Tensor } from '../tensor';
import { keep } from '../memory';
import { zerosLike } from '../ops/creation';
import { Optimizer, type ParamsArg } from './optimizer';
import { errorOf } from '../errors';
import { bumpVersions } from '../autograd/version';

export interface AdamOptions {
  lr: number;
  betas: [number, number];
  eps: number;
  weightDecay: number;
}

export class Adam extends Optimizer<AdamOptions> {
  protected readonly decoupled: boolean = false;

  constructor(params: ParamsArg<AdamOptions>, options: Partial<AdamOptions> = {}, defaultWeightDecay = 0) {
    const d: AdamOptions = { lr: 1e-3, betas: [0.9, 0.999], eps: 1e-8, weightDecay: defaultWeightDecay, ...options };
    const [b1, b2] = d.betas;
    if (!(b1 >= 0 && b1 < 1 && b2 >= 0 && b2 < 1)) throw errorOf('ERR_RANGE', `Adam: betas must be in [0, 1), got [${d.betas}]`);
    if (!(d.eps >= 0) || !(d.weightDecay >= 0)) throw errorOf('ERR_RANGE', 'Adam: eps and weightDecay must be ≥ 0');
    super(params, d);
  }

  step(): void {
    for (const g of this.paramGroups) {
      // Parameters share one native call per step count (they differ only if some had no grad).
      const byStep = new Map<number, { ps: Tensor[]; gs: Tensor[]; m: Tensor[]; v: Tensor[] }>();
      for (const p of g.params) {
        if (!p.grad) continue;
        let s = this.state.get(p);
        if (!s) {
          s = { step: 0, expAvg: keep(zerosLike(p)), expAvgSq: keep(zerosLike(p)) };
          this.state.set(p, s);
        }
        const step = (s.step as number) + 1;
        s.step = step;
        let b = byStep.get(step);
        if (!b) byStep.set(step, (b = { ps: [], gs: [], m: [], v: [] }));
        b.ps.push(p);
        b.gs.push(p.grad);
        b.m.push(s.expAvg as Tensor);
        b.v.push(s.expAvgSq as Tensor);
      }
      for (const [step, b] of byStep) {
        native.adamStep(b.ps.map((t) => t.handle), b.gs.map((t) => t.handle), b.m.map((t) => t.handle), b.v.map((t) => t.handle),
          g.lr, g.betas[0], g.betas[1], g.eps, g.weightDecay, step, this.decoupled);
        bumpVersions(`${this.constructor.name}.step`, b.ps);
      }
    }
  }
}

/** Adam with decoupled weight decay (default 0.01), as torch.optim.AdamW. */
export class AdamW extends Adam {
  protected override readonly decoupled: boolean = true;

  constructor(params: ParamsArg<AdamOptions>, options: Partial<AdamOptions> = {}) {
    super(params, options, 0.01);
  }
}
