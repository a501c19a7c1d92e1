/**
 * RMSprop (plain or centered, with momentum, weight decay and maximize) in torch.optim's update
 * rule; one fused native call per group and device.
 */
import { native } from '../native';
import type { Tensor } from '../tensor';
import { Optimizer, type OptimizerSpec, type ParamsArg, zeroState } from './optimizer';
import { fusedStep } from './fused_step';
import { checkOptions } from '../errors';
import { checkBool, checkNumber } from '../validate';
import { bumpVersions } from '../dispatch/version';
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
        const stepped = fusedStep(
          this.stepParams(op, gi),
          ['sq', 'ga', 'bufs'] as const,
          { byStep: false, stochasticRounding: g.stochasticRounding },
          (p) => {
            let s = this.state.get(p);
            if (!s) this.state.set(p, (s = { step: 0, squareAvg: zeroState(p) }));
            // Zeros when momentum or centering is turned on later: as a fresh start would make them.
            if (g.momentum > 0 && !s.momentumBuffer) s.momentumBuffer = zeroState(p);
            if (g.centered && !s.gradAvg) s.gradAvg = zeroState(p);
            s.step = (s.step as number) + 1;
            const lists = {
              sq: s.squareAvg as Tensor,
              ga: g.centered ? (s.gradAvg as Tensor) : undefined,
              bufs: g.momentum > 0 ? (s.momentumBuffer as Tensor) : undefined,
            };
            return { state: s, step: s.step, lists };
          },
          (b) =>
            native.rmspropStep(
              b.ps,
              b.gs,
              b.lists.sq,
              b.lists.ga,
              b.lists.bufs,
              g.lr,
              g.alpha,
              g.eps,
              g.weightDecay,
              g.momentum,
              g.centered,
              g.maximize,
              b.masters,
              b.stochasticRounding,
              b.seed,
              b.offset,
            ),
        );
        for (const ps of stepped) bumpVersions(op, ps);
      });
    });
  }
}
