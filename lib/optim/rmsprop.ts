/**
 * RMSprop (plain or centered, with momentum, weight decay and maximize) in torch.optim's update
 * rule; one fused native call per group and device.
 */
import { native } from '../native';
import type { Tensor } from '../tensor';
import { Optimizer, type OptimizerSpec, type ParamsArg, hasMaster, masterOf, zeroState } from './optimizer';
import { nextDraw } from '../random';
import { checkOptions } from '../errors';
import { checkBool, checkNumber } from '../validate';
import { bumpVersions } from '../autograd/version';
import { rejectUnsupported } from './unsupported';

export interface RMSpropOptions {
  lr: number;
  /** Smoothing constant of the running average of squared gradients (default 0.99). */
  alpha: number;
  eps: number;
  weightDecay: number;
  momentum: number;
  /** Normalize by the estimated variance of the gradient (the average's square subtracted), as PyTorch. */
  centered: boolean;
  /** Ascend the objective instead of descending it (the gradient's sign is flipped), as PyTorch. */
  maximize: boolean;
  /** bf16/f16 parameters only: round each updated f32 master to the parameter stochastically (default false). */
  stochasticRounding: boolean;
}

const RMSPROP_SPEC: OptimizerSpec<RMSpropOptions> = {
  keys: ['lr', 'alpha', 'eps', 'weightDecay', 'momentum', 'centered', 'maximize', 'stochasticRounding'],
  check(op, h, at) {
    checkNumber(op, `${at}lr`, h.lr, { min: 0 });
    checkNumber(op, `${at}alpha`, h.alpha, { min: 0 });
    checkNumber(op, `${at}eps`, h.eps, { min: 0 });
    checkNumber(op, `${at}weightDecay`, h.weightDecay, { min: 0 });
    checkNumber(op, `${at}momentum`, h.momentum, { min: 0 });
    checkBool(op, `${at}centered`, h.centered);
    checkBool(op, `${at}maximize`, h.maximize);
    checkBool(op, `${at}stochasticRounding`, h.stochasticRounding);
  },
  state: { step: 'count', squareAvg: 'tensor', momentumBuffer: 'tensor', gradAvg: 'tensor', masterParam: 'tensor' },
  requiredState: ['step', 'squareAvg'],
};

interface Batch {
  ps: Tensor[];
  gs: Tensor[];
  sq: Tensor[];
  ga: Tensor[];
  bufs: Tensor[];
  masters: Tensor[];
  numel: number;
}

/**
 * torch.optim.RMSprop: `new RMSprop(model.parameters(), { lr: 0.01, alpha: 0.99, momentum: 0.9, centered: true })`.
 * State per parameter: `step`, `squareAvg`, and `momentumBuffer` (momentum > 0) and `gradAvg`
 * (centered), as PyTorch's state dict names them in camelCase.
 */
export class RMSprop extends Optimizer<RMSpropOptions> {
  constructor(params: ParamsArg<RMSpropOptions>, options: Partial<RMSpropOptions> = {}) {
    rejectUnsupported('RMSprop', options, ['foreach', 'differentiable', 'capturable', 'fused']);
    const o = checkOptions('RMSprop', options, RMSPROP_SPEC.keys);
    super(
      params,
      {
        lr: 1e-2,
        alpha: 0.99,
        eps: 1e-8,
        weightDecay: 0,
        momentum: 0,
        centered: false,
        maximize: false,
        stochasticRounding: false,
        ...o,
      },
      RMSPROP_SPEC,
    );
  }

  step(): void {
    const op = 'RMSprop.step';
    this.transaction(op, () => {
      this.paramGroups.forEach((g, gi) => {
        const ps = this.stepParams(op, gi);
        // One call per device and kind (f32/f64 in place, bf16/f16 through f32 masters).
        const batches = new Map<string, Batch>();
        for (const p of ps) {
          let s = this.state.get(p);
          if (!s) this.state.set(p, (s = { step: 0, squareAvg: zeroState(p) }));
          // Zeros when momentum or centering is turned on later: as a fresh start would make them.
          if (g.momentum > 0 && !s.momentumBuffer) s.momentumBuffer = zeroState(p);
          if (g.centered && !s.gradAvg) s.gradAvg = zeroState(p);
          s.step = (s.step as number) + 1;
          const key = `${p.device}/${hasMaster(p)}`;
          let b = batches.get(key);
          if (!b) batches.set(key, (b = { ps: [], gs: [], sq: [], ga: [], bufs: [], masters: [], numel: 0 }));
          b.ps.push(p);
          b.gs.push(p.grad as Tensor);
          b.sq.push(s.squareAvg as Tensor);
          if (g.centered) b.ga.push(s.gradAvg as Tensor);
          if (g.momentum > 0) b.bufs.push(s.momentumBuffer as Tensor);
          if (hasMaster(p)) b.masters.push(masterOf(p, s));
          b.numel += p.numel();
        }
        const h = (ts: Tensor[]) => ts.map((t) => t.handle);
        for (const b of batches.values()) {
          const sr = g.stochasticRounding && b.masters.length > 0;
          const draw = sr ? nextDraw(b.numel) : { seed: 0, offset: 0 };
          native.rmspropStep(
            h(b.ps),
            h(b.gs),
            h(b.sq),
            h(b.ga),
            h(b.bufs),
            g.lr,
            g.alpha,
            g.eps,
            g.weightDecay,
            g.momentum,
            g.centered,
            g.maximize,
            h(b.masters),
            sr,
            draw.seed,
            draw.offset,
          );
          bumpVersions(op, b.ps);
        }
      });
    });
  }
}
