/**
 * Adam and AdamW (decoupled weight decay) with bias correction, amsgrad and maximize, as
 * torch.optim; one fused native call per group.
 */
import { native } from '../native';
import type { Tensor } from '../tensor';
import { Optimizer, type OptimizerSpec, type ParamsArg, zeroState } from './optimizer';
import { fusedStep } from './fused_step';
import { argError, checkOptions, describe } from '../errors';
import { checkBool, checkNumber } from '../validate';
import { bumpVersions } from '../dispatch/version';

export interface AdamOptions {
  lr: number;
  betas: [number, number];
  eps: number;
  weightDecay: number;
  /** Divide by the running maximum of the second moments (state `maxExpAvgSq`), as PyTorch. */
  amsgrad: boolean;
  /** Ascend the objective instead of descending it (the gradient's sign is flipped), as PyTorch. */
  maximize: boolean;
  /**
   * bf16/f16 parameters only (they train through f32 master weights): round each updated master to
   * the parameter's dtype stochastically instead of to nearest (default false).
   */
  stochasticRounding: boolean;
}

const ADAM_SPEC: OptimizerSpec<AdamOptions> = {
  keys: ['lr', 'betas', 'eps', 'weightDecay', 'amsgrad', 'maximize', 'stochasticRounding'],
  check(op, h, at) {
    checkNumber(op, `${at}lr`, h.lr, { min: 0 });
    if (!Array.isArray(h.betas) || h.betas.length !== 2)
      throw argError(op, `${at}betas must be a pair [beta1, beta2], got ${describe(h.betas)}`);
    checkNumber(op, `${at}betas[0]`, h.betas[0], { min: 0, below: 1 });
    checkNumber(op, `${at}betas[1]`, h.betas[1], { min: 0, below: 1 });
    checkNumber(op, `${at}eps`, h.eps, { min: 0 });
    checkNumber(op, `${at}weightDecay`, h.weightDecay, { min: 0 });
    checkBool(op, `${at}amsgrad`, h.amsgrad);
    checkBool(op, `${at}maximize`, h.maximize);
    checkBool(op, `${at}stochasticRounding`, h.stochasticRounding);
  },
  state: { step: 'count', expAvg: 'tensor', expAvgSq: 'tensor', maxExpAvgSq: 'tensor', masterParam: 'tensor' },
  requiredState: ['step', 'expAvg', 'expAvgSq'],
};

export class Adam extends Optimizer<AdamOptions> {
  protected readonly decoupled: boolean = false;

  constructor(params: ParamsArg<AdamOptions>, options: Partial<AdamOptions> = {}, defaultWeightDecay = 0) {
    const o = checkOptions(new.target.name, options, ADAM_SPEC.keys);
    super(
      params,
      {
        lr: 1e-3,
        betas: [0.9, 0.999],
        eps: 1e-8,
        weightDecay: defaultWeightDecay,
        amsgrad: false,
        maximize: false,
        stochasticRounding: false,
        ...o,
      },
      ADAM_SPEC,
    );
  }

  step(): void {
    const op = `${this.constructor.name}.step`;
    this.transaction(op, () => {
      this.paramGroups.forEach((g, gi) => {
        const stepped = fusedStep(
          this.stepParams(op, gi),
          ['m', 'v', 'mv'] as const,
          { byStep: true, stochasticRounding: g.stochasticRounding },
          (p) => {
            let s = this.state.get(p);
            if (!s) this.state.set(p, (s = { step: 0, expAvg: zeroState(p), expAvgSq: zeroState(p) }));
            // Zeros when amsgrad is turned on later or the state came from a run without it: the
            // first maximum is then v itself, as on a fresh start.
            if (g.amsgrad && !s.maxExpAvgSq) s.maxExpAvgSq = zeroState(p);
            s.step = (s.step as number) + 1;
            const lists = { m: s.expAvg as Tensor, v: s.expAvgSq as Tensor, mv: g.amsgrad ? (s.maxExpAvgSq as Tensor) : undefined };
            return { state: s, step: s.step, lists };
          },
          (b) =>
            native.adamStep(
              b.ps,
              b.gs,
              b.lists.m,
              b.lists.v,
              b.lists.mv,
              g.lr,
              g.betas[0],
              g.betas[1],
              g.eps,
              g.weightDecay,
              b.step,
              this.decoupled,
              g.amsgrad,
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

/** Adam with decoupled weight decay (default 0.01), as torch.optim.AdamW. */
export class AdamW extends Adam {
  protected override readonly decoupled: boolean = true;

  constructor(params: ParamsArg<AdamOptions>, options: Partial<AdamOptions> = {}) {
    super(params, options, 0.01);
  }
}
