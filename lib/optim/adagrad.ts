/** Adagrad (lr decay, weight decay, initial accumulator, maximize) in torch.optim's update rule; one fused native call per group. */
import { native } from '../native';
import type { Tensor } from '../tensor';
import { Optimizer, type OptimizerSpec, type ParamsArg, stateDType } from './optimizer';
import { fusedStep } from './fused_step';
import { checkOptions } from '../errors';
import { checkBool, checkNumber } from '../validate';
import { bumpVersions } from '../dispatch/version';
import { keep } from '../memory';
import { full } from '../ops/creation';
import { rejectUnsupported } from './unsupported';

export interface AdagradOptions {
  lr: number;
  /** The step's lr is lr / (1 + (step - 1) * lrDecay). */
  lrDecay: number;
  weightDecay: number;
  /** The starting value of every parameter's sum of squared gradients. */
  initialAccumulatorValue: number;
  eps: number;
  /** Ascend the objective instead of descending it (the gradient's sign is flipped), as PyTorch. */
  maximize: boolean;
  /** bf16/f16 parameters only: round each updated f32 master to the parameter stochastically (default false). */
  stochasticRounding: boolean;
}

const ADAGRAD_SPEC: OptimizerSpec<AdagradOptions> = {
  keys: ['lr', 'lrDecay', 'weightDecay', 'initialAccumulatorValue', 'eps', 'maximize', 'stochasticRounding'],
  check(op, h, at) {
    checkNumber(op, `${at}lr`, h.lr, { min: 0 });
    checkNumber(op, `${at}lrDecay`, h.lrDecay, { min: 0 });
    checkNumber(op, `${at}weightDecay`, h.weightDecay, { min: 0 });
    checkNumber(op, `${at}initialAccumulatorValue`, h.initialAccumulatorValue, { min: 0 });
    checkNumber(op, `${at}eps`, h.eps, { min: 0 });
    checkBool(op, `${at}maximize`, h.maximize);
    checkBool(op, `${at}stochasticRounding`, h.stochasticRounding);
  },
  state: { step: 'count', sum: 'tensor', masterParam: 'tensor' },
  requiredState: ['step', 'sum'],
};

/**
 * torch.optim.Adagrad: `new Adagrad(model.parameters(), { lr: 0.01, lrDecay: 0, initialAccumulatorValue: 0.1 })`.
 * State per parameter: `step` and `sum` (made at the first step from the group's
 * initialAccumulatorValue; PyTorch makes it at construction from the same value).
 */
export class Adagrad extends Optimizer<AdagradOptions> {
  constructor(params: ParamsArg<AdagradOptions>, options: Partial<AdagradOptions> = {}) {
    rejectUnsupported('Adagrad', options, ['foreach', 'differentiable', 'capturable', 'fused']);
    const o = checkOptions('Adagrad', options, ADAGRAD_SPEC.keys);
    super(
      params,
      { lr: 1e-2, lrDecay: 0, weightDecay: 0, initialAccumulatorValue: 0, eps: 1e-10, maximize: false, stochasticRounding: false, ...o },
      ADAGRAD_SPEC,
    );
  }

  step(): void {
    const op = 'Adagrad.step';
    this.transaction(op, () => {
      this.paramGroups.forEach((g, gi) => {
        // By step count too: the learning rate decays with it.
        const stepped = fusedStep(
          this.stepParams(op, gi),
          ['sums'] as const,
          { byStep: true, stochasticRounding: g.stochasticRounding },
          (p) => {
            let s = this.state.get(p);
            if (!s) {
              const sum = keep(full([...p.shape], g.initialAccumulatorValue, { dtype: stateDType(p), device: p.device }));
              this.state.set(p, (s = { step: 0, sum }));
            }
            s.step = (s.step as number) + 1;
            return { state: s, step: s.step, lists: { sums: s.sum as Tensor } };
          },
          (b) =>
            native.adagradStep(
              b.ps,
              b.gs,
              b.lists.sums,
              g.lr,
              g.lrDecay,
              g.eps,
              g.weightDecay,
              b.step,
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
