/** Adagrad (lr decay, weight decay, initial accumulator, maximize) in torch.optim's update rule; one fused native call per group. */
import { native } from '../native';
import type { Tensor } from '../tensor';
import { Optimizer, type OptimizerSpec, type ParamsArg, hasMaster, masterOf, stateDType } from './optimizer';
import { nextDraw } from '../random';
import { checkOptions } from '../errors';
import { checkBool, checkNumber } from '../validate';
import { bumpVersions } from '../autograd/version';
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
        const ps = this.stepParams(op, gi);
        // One call per step count (the lr decays with it), device and kind (f32/f64 in place, bf16/f16 through masters).
        const batches = new Map<string, { step: number; ps: Tensor[]; gs: Tensor[]; sums: Tensor[]; masters: Tensor[]; numel: number }>();
        for (const p of ps) {
          let s = this.state.get(p);
          if (!s) {
            const sum = keep(full([...p.shape], g.initialAccumulatorValue, { dtype: stateDType(p), device: p.device }));
            this.state.set(p, (s = { step: 0, sum }));
          }
          const step = (s.step as number) + 1;
          s.step = step;
          const key = `${step}/${p.device}/${hasMaster(p)}`;
          let b = batches.get(key);
          if (!b) batches.set(key, (b = { step, ps: [], gs: [], sums: [], masters: [], numel: 0 }));
          b.ps.push(p);
          b.gs.push(p.grad as Tensor);
          b.sums.push(s.sum as Tensor);
          if (hasMaster(p)) b.masters.push(masterOf(p, s));
          b.numel += p.numel();
        }
        const h = (ts: Tensor[]) => ts.map((t) => t.handle);
        for (const b of batches.values()) {
          const sr = g.stochasticRounding && b.masters.length > 0;
          const draw = sr ? nextDraw(b.numel) : { seed: 0, offset: 0 };
          native.adagradStep(
            h(b.ps),
            h(b.gs),
            h(b.sums),
            g.lr,
            g.lrDecay,
            g.eps,
            g.weightDecay,
            b.step,
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
