/**
 * The closed-form and metric-driven schedulers of torch.optim.lr_scheduler: LambdaLR, OneCycleLR,
 * CyclicLR (these three set every step's lr from the step number, not from the current lr) and
 * ReduceLROnPlateau (steps on a metric). Options as PyTorch's keyword arguments, in camelCase.
 */
import { type AnyOptimizer, LRScheduler, type SchedulerStateDict, restore, settings, stateOf } from './scheduler';
import { Optimizer } from './optimizer';
import { argError, describe, flockError, outOfRange } from '../errors';
import { checkBool, checkChoice, checkInt, checkNumber } from '../validate';
import { Tensor } from '../tensor';

/** A number, or one per parameter group. */
type PerGroup = number | number[];

function perGroup(op: string, name: string, v: unknown, groups: number, range: Parameters<typeof checkNumber>[3] = {}): number[] {
  if (Array.isArray(v)) {
    if (v.length !== groups) throw argError(op, `${name} must hold one value per parameter group (${groups}), got ${v.length}`);
    return v.map((x, i) => checkNumber(op, `${name}[${i}]`, x, range));
  }
  const x = checkNumber(op, name, v, range);
  return new Array(groups).fill(x);
}

/** How a scheduler reaches a group's momentum: SGD/RMSprop's `momentum`, or beta1 of Adam's `betas`. */
type MomentumKey = 'momentum' | 'betas';

function momentumKey(op: string, optimizer: AnyOptimizer, allowBetas: boolean): MomentumKey {
  const d = optimizer.defaults as unknown as Record<string, unknown>;
  if (allowBetas && Array.isArray(d.betas)) return 'betas';
  if (typeof d.momentum === 'number') return 'momentum';
  throw argError(
    op,
    `cycleMomentum needs an optimizer with ${allowBetas ? "'momentum' or 'betas'" : "'momentum'"} (${optimizer.constructor.name} has neither); pass cycleMomentum: false`,
  );
}

function setMomentum(optimizer: AnyOptimizer, key: MomentumKey, i: number, m: number): void {
  const g = optimizer.paramGroups[i] as unknown as Record<string, unknown>;
  if (key === 'betas') g.betas = [m, ...(g.betas as number[]).slice(1)];
  else g.momentum = m;
}

/** The lr of group i is its initial lr times lrLambda(step), as torch.optim.lr_scheduler.LambdaLR. */
export class LambdaLR extends LRScheduler {
  // Not part of the state dict, as in PyTorch: a resumed run constructs the scheduler with its functions again.
  readonly #lambdas: Array<(epoch: number) => number>;

  /** `new LambdaLR(opt, (step) => 0.95 ** step)`, or one function per parameter group, or `{ lrLambda }`. */
  constructor(
    optimizer: AnyOptimizer,
    lrLambda:
      | ((epoch: number) => number)
      | Array<(epoch: number) => number>
      | { lrLambda: ((epoch: number) => number) | Array<(epoch: number) => number> },
  );
  constructor(optimizer: AnyOptimizer, ...args: unknown[]) {
    super(optimizer);
    const a = settings('LambdaLR', args, ['lrLambda']);
    const n = optimizer.paramGroups.length;
    const fns = Array.isArray(a.lrLambda) ? a.lrLambda : new Array(n).fill(a.lrLambda);
    if (fns.length !== n) throw argError('LambdaLR', `lrLambda must be a function or one per parameter group (${n}), got ${fns.length}`);
    fns.forEach((f, i) => {
      if (typeof f !== 'function')
        throw argError(
          'LambdaLR',
          `lrLambda${Array.isArray(a.lrLambda) ? `[${i}]` : ''} must be a function of the step, got ${describe(f)}`,
        );
    });
    this.#lambdas = fns;
    this.start();
  }

  protected nextLr(_lr: number, i: number): number {
    const f = this.#lambdas[i](this.lastEpoch);
    return this.baseLrs[i] * checkNumber('LambdaLR', `lrLambda(${this.lastEpoch}) of group ${i}`, f, { infinite: true });
  }
}

interface Phase {
  endStep: number;
  startLr: 'initialLrs' | 'maxLrs' | 'minLrs';
  endLr: 'initialLrs' | 'maxLrs' | 'minLrs';
  startMomentum: 'maxMomentums' | 'baseMomentums';
  endMomentum: 'maxMomentums' | 'baseMomentums';
}

export interface OneCycleLROptions {
  /** The peak lr, or one per group. */
  maxLr: PerGroup;
  /** The number of steps of the cycle; or give epochs and stepsPerEpoch. */
  totalSteps?: number;
  epochs?: number;
  stepsPerEpoch?: number;
  /** The fraction of the cycle spent raising the lr (default 0.3). */
  pctStart?: number;
  annealStrategy?: 'cos' | 'linear';
  /** Cycle the momentum (SGD/RMSprop) or beta1 (Adam/AdamW) inversely to the lr (default true). */
  cycleMomentum?: boolean;
  baseMomentum?: PerGroup;
  maxMomentum?: PerGroup;
  /** The initial lr is maxLr / divFactor (default 25). */
  divFactor?: number;
  /** The final lr is the initial lr / finalDivFactor (default 1e4). */
  finalDivFactor?: number;
  /** Warm up, come back down to the initial lr symmetrically, then anneal to the final lr (fast.ai's schedule). */
  threePhase?: boolean;
}

const ONE_CYCLE_NAMES = [
  'maxLr',
  'totalSteps',
  'epochs',
  'stepsPerEpoch',
  'pctStart',
  'annealStrategy',
  'cycleMomentum',
  'baseMomentum',
  'maxMomentum',
  'divFactor',
  'finalDivFactor',
  'threePhase',
] as const;

/** The 1cycle policy (Smith and Topin), as torch.optim.lr_scheduler.OneCycleLR; step() after every batch. */
export class OneCycleLR extends LRScheduler {
  readonly totalSteps: number;
  readonly annealStrategy: 'cos' | 'linear';
  readonly cycleMomentum: boolean;
  /** Whether the momentum cycled is Adam's beta1. */
  readonly useBeta1: boolean;
  readonly phases: Phase[];
  readonly initialLrs: number[];
  readonly maxLrs: number[];
  readonly minLrs: number[];
  readonly maxMomentums: number[];
  readonly baseMomentums: number[];

  /** `new OneCycleLR(opt, { maxLr: 0.1, totalSteps: 1000 })` or `new OneCycleLR(opt, 0.1, { epochs: 10, stepsPerEpoch: 100 })`. */
  constructor(optimizer: AnyOptimizer, options: OneCycleLROptions);
  constructor(optimizer: AnyOptimizer, maxLr: PerGroup, options?: Omit<OneCycleLROptions, 'maxLr'>);
  constructor(optimizer: AnyOptimizer, ...args: unknown[]) {
    super(optimizer);
    const op = 'OneCycleLR';
    const a = settings(op, args, ONE_CYCLE_NAMES);
    const n = optimizer.paramGroups.length;
    if (a.totalSteps !== undefined) this.totalSteps = checkInt(op, 'totalSteps', a.totalSteps, 1);
    else if (a.epochs !== undefined || a.stepsPerEpoch !== undefined)
      this.totalSteps = checkInt(op, 'epochs', a.epochs, 1) * checkInt(op, 'stepsPerEpoch', a.stepsPerEpoch, 1);
    else throw argError(op, 'give either totalSteps or epochs and stepsPerEpoch');
    const pct = checkNumber(op, 'pctStart', a.pctStart ?? 0.3, { min: 0, max: 1 });
    this.annealStrategy = checkChoice(op, 'annealStrategy', a.annealStrategy ?? 'cos', ['cos', 'linear'] as const);
    const three = checkBool(op, 'threePhase', a.threePhase ?? false);
    const T = this.totalSteps;
    this.phases = three
      ? [
          { endStep: pct * T - 1, startLr: 'initialLrs', endLr: 'maxLrs', startMomentum: 'maxMomentums', endMomentum: 'baseMomentums' },
          { endStep: 2 * pct * T - 2, startLr: 'maxLrs', endLr: 'initialLrs', startMomentum: 'baseMomentums', endMomentum: 'maxMomentums' },
          { endStep: T - 1, startLr: 'initialLrs', endLr: 'minLrs', startMomentum: 'maxMomentums', endMomentum: 'maxMomentums' },
        ]
      : [
          { endStep: pct * T - 1, startLr: 'initialLrs', endLr: 'maxLrs', startMomentum: 'maxMomentums', endMomentum: 'baseMomentums' },
          { endStep: T - 1, startLr: 'maxLrs', endLr: 'minLrs', startMomentum: 'baseMomentums', endMomentum: 'maxMomentums' },
        ];
    const div = checkNumber(op, 'divFactor', a.divFactor ?? 25, { above: 0 });
    const finalDiv = checkNumber(op, 'finalDivFactor', a.finalDivFactor ?? 1e4, { above: 0 });
    this.maxLrs = perGroup(op, 'maxLr', a.maxLr, n, { min: 0 });
    this.initialLrs = this.maxLrs.map((m) => m / div);
    this.minLrs = this.initialLrs.map((l) => l / finalDiv);
    this.cycleMomentum = checkBool(op, 'cycleMomentum', a.cycleMomentum ?? true);
    this.useBeta1 = this.cycleMomentum && momentumKey(op, optimizer, true) === 'betas';
    this.maxMomentums = perGroup(op, 'maxMomentum', a.maxMomentum ?? 0.95, n, { min: 0 });
    this.baseMomentums = perGroup(op, 'baseMomentum', a.baseMomentum ?? 0.85, n, { min: 0 });
    this.baseLrs.splice(0, n, ...this.initialLrs);
    this.start();
  }

  private anneal(start: number, end: number, pct: number): number {
    return this.annealStrategy === 'cos' ? end + ((start - end) / 2) * (Math.cos(Math.PI * pct) + 1) : (end - start) * pct + start;
  }

  override step(): void {
    if (this.lastEpoch + 1 > this.totalSteps)
      throw outOfRange('OneCycleLR.step', `tried to step ${this.lastEpoch + 2} times; the cycle has totalSteps ${this.totalSteps}`);
    super.step();
  }

  protected nextLr(_lr: number, i: number): number {
    const step = this.lastEpoch;
    let start = 0;
    for (let k = 0; k < this.phases.length; k++) {
      const ph = this.phases[k];
      if (step <= ph.endStep || k === this.phases.length - 1) {
        if (ph.endStep === start)
          throw outOfRange('OneCycleLR', `phase ${k} of the cycle is empty (totalSteps ${this.totalSteps} is too few for this pctStart)`);
        const pct = (step - start) / (ph.endStep - start);
        if (this.cycleMomentum)
          setMomentum(
            this.optimizer,
            this.useBeta1 ? 'betas' : 'momentum',
            i,
            this.anneal(this[ph.startMomentum][i], this[ph.endMomentum][i], pct),
          );
        return this.anneal(this[ph.startLr][i], this[ph.endLr][i], pct);
      }
      start = ph.endStep;
    }
    return _lr;
  }
}

export interface CyclicLROptions {
  /** The lower lr boundary, or one per group; set as each group's lr at construction. */
  baseLr: PerGroup;
  maxLr: PerGroup;
  /** Steps of the rising half of a cycle (default 2000). */
  stepSizeUp?: number;
  /** Steps of the falling half (default stepSizeUp). */
  stepSizeDown?: number;
  mode?: 'triangular' | 'triangular2' | 'exp_range';
  /** exp_range's factor: the amplitude is scaled by gamma ** step. */
  gamma?: number;
  /** A custom amplitude scale in [0, 1] of the cycle number or step (replaces mode; not saved in the state dict). */
  scaleFn?: (x: number) => number;
  scaleMode?: 'cycle' | 'iterations';
  /** Cycle the momentum inversely to the lr, between baseMomentum and maxMomentum (default true). */
  cycleMomentum?: boolean;
  baseMomentum?: PerGroup;
  maxMomentum?: PerGroup;
}

const CYCLIC_NAMES = [
  'baseLr',
  'maxLr',
  'stepSizeUp',
  'stepSizeDown',
  'mode',
  'gamma',
  'scaleFn',
  'scaleMode',
  'cycleMomentum',
  'baseMomentum',
  'maxMomentum',
] as const;

/** The cyclical learning rate policy (Smith), as torch.optim.lr_scheduler.CyclicLR; step() after every batch. */
export class CyclicLR extends LRScheduler {
  readonly maxLrs: number[];
  readonly totalSize: number;
  readonly stepRatio: number;
  readonly mode: 'triangular' | 'triangular2' | 'exp_range';
  readonly gamma: number;
  readonly scaleMode: 'cycle' | 'iterations';
  readonly cycleMomentum: boolean;
  readonly baseMomentums: number[];
  readonly maxMomentums: number[];
  readonly #scaleFn: ((x: number) => number) | null;

  /** `new CyclicLR(opt, { baseLr: 0.001, maxLr: 0.1, stepSizeUp: 500 })` or `new CyclicLR(opt, 0.001, 0.1, { mode: 'triangular2' })`. */
  constructor(optimizer: AnyOptimizer, options: CyclicLROptions);
  constructor(optimizer: AnyOptimizer, baseLr: PerGroup, maxLr: PerGroup, options?: Omit<CyclicLROptions, 'baseLr' | 'maxLr'>);
  constructor(optimizer: AnyOptimizer, ...args: unknown[]) {
    super(optimizer);
    const op = 'CyclicLR';
    const a = settings(op, args, CYCLIC_NAMES);
    const n = optimizer.paramGroups.length;
    const baseLrs = perGroup(op, 'baseLr', a.baseLr, n, { min: 0 });
    this.maxLrs = perGroup(op, 'maxLr', a.maxLr, n, { min: 0 });
    const up = checkNumber(op, 'stepSizeUp', a.stepSizeUp ?? 2000, { above: 0 });
    const down = a.stepSizeDown === undefined ? up : checkNumber(op, 'stepSizeDown', a.stepSizeDown, { above: 0 });
    this.totalSize = up + down;
    this.stepRatio = up / this.totalSize;
    this.mode = checkChoice(op, 'mode', a.mode ?? 'triangular', ['triangular', 'triangular2', 'exp_range'] as const);
    this.gamma = checkNumber(op, 'gamma', a.gamma ?? 1, { min: 0 });
    if (a.scaleFn !== undefined && typeof a.scaleFn !== 'function')
      throw argError(op, `scaleFn must be a function, got ${describe(a.scaleFn)}`);
    const scaleFn = (a.scaleFn as ((x: number) => number) | undefined) ?? null;
    this.#scaleFn = scaleFn;
    if (scaleFn) this.scaleMode = checkChoice(op, 'scaleMode', a.scaleMode ?? 'cycle', ['cycle', 'iterations'] as const);
    else {
      if (a.scaleMode !== undefined) throw argError(op, 'scaleMode applies only with scaleFn (each mode has its own)');
      this.scaleMode = this.mode === 'exp_range' ? 'iterations' : 'cycle';
    }
    this.cycleMomentum = checkBool(op, 'cycleMomentum', a.cycleMomentum ?? true);
    this.baseMomentums = perGroup(op, 'baseMomentum', a.baseMomentum ?? 0.8, n, { min: 0 });
    this.maxMomentums = perGroup(op, 'maxMomentum', a.maxMomentum ?? 0.9, n, { min: 0 });
    if (this.cycleMomentum) {
      momentumKey(op, optimizer, false);
      this.baseMomentums.forEach((m, i) => setMomentum(optimizer, 'momentum', i, m));
    }
    optimizer.paramGroups.forEach((g, i) => (g.lr = baseLrs[i]));
    this.baseLrs.splice(0, n, ...baseLrs);
    this.start();
  }

  private scale(x: number): number {
    if (this.#scaleFn) return checkNumber('CyclicLR', `scaleFn(${x})`, this.#scaleFn(x), { infinite: true });
    if (this.mode === 'triangular') return 1;
    if (this.mode === 'triangular2') return 1 / 2 ** (x - 1);
    return this.gamma ** x;
  }

  protected nextLr(_lr: number, i: number): number {
    const cycle = Math.floor(1 + this.lastEpoch / this.totalSize);
    const x = 1 + this.lastEpoch / this.totalSize - cycle;
    const factor = x <= this.stepRatio ? x / this.stepRatio : (x - 1) / (this.stepRatio - 1);
    const s = this.scale(this.scaleMode === 'cycle' ? cycle : this.lastEpoch);
    if (this.cycleMomentum)
      setMomentum(this.optimizer, 'momentum', i, this.maxMomentums[i] - (this.maxMomentums[i] - this.baseMomentums[i]) * factor * s);
    return this.baseLrs[i] + (this.maxLrs[i] - this.baseLrs[i]) * factor * s;
  }
}

export interface ReduceLROnPlateauOptions {
  /** 'min': a lower metric is better (a loss); 'max': a higher one (an accuracy). */
  mode?: 'min' | 'max';
  /** The lr is multiplied by factor (< 1) on a plateau (default 0.1). */
  factor?: number;
  /** Steps without improvement tolerated before the lr is reduced (default 10). */
  patience?: number;
  /** The least change that counts as an improvement (default 1e-4). */
  threshold?: number;
  /** 'rel': relative to the best value; 'abs': absolute. */
  thresholdMode?: 'rel' | 'abs';
  /** Steps after a reduction during which bad steps are not counted (default 0). */
  cooldown?: number;
  /** The lowest lr, or one per group (default 0). */
  minLr?: PerGroup;
  /** A reduction smaller than eps is not made (default 1e-8). */
  eps?: number;
}

const PLATEAU_NAMES = ['mode', 'factor', 'patience', 'threshold', 'thresholdMode', 'cooldown', 'minLr', 'eps'] as const;

/**
 * Reduces the lr when a metric stops improving, as torch.optim.lr_scheduler.ReduceLROnPlateau:
 * `scheduler.step(validationLoss)` once per epoch. The metric is a number (`await loss.item()`):
 * reading a tensor is a sync point, which step() does not make for you.
 */
export class ReduceLROnPlateau {
  readonly mode: 'min' | 'max';
  readonly factor: number;
  readonly patience: number;
  readonly threshold: number;
  readonly thresholdMode: 'rel' | 'abs';
  readonly cooldown: number;
  readonly minLrs: number[];
  readonly eps: number;
  /** The best metric so far (Infinity or -Infinity before the first step). */
  best: number;
  numBadEpochs = 0;
  cooldownCounter = 0;
  /** Steps taken so far. */
  lastEpoch = 0;

  constructor(
    readonly optimizer: AnyOptimizer,
    options: ReduceLROnPlateauOptions = {},
  ) {
    const op = 'ReduceLROnPlateau';
    if (!(optimizer instanceof Optimizer)) throw argError(op, `optimizer must be an fl.optim Optimizer, got ${describe(optimizer)}`);
    const a = settings(op, [options], PLATEAU_NAMES);
    this.mode = checkChoice(op, 'mode', a.mode ?? 'min', ['min', 'max'] as const);
    this.factor = checkNumber(op, 'factor', a.factor ?? 0.1, { min: 0, below: 1 });
    this.patience = checkInt(op, 'patience', a.patience ?? 10, 0);
    this.threshold = checkNumber(op, 'threshold', a.threshold ?? 1e-4, { min: 0 });
    this.thresholdMode = checkChoice(op, 'thresholdMode', a.thresholdMode ?? 'rel', ['rel', 'abs'] as const);
    this.cooldown = checkInt(op, 'cooldown', a.cooldown ?? 0, 0);
    this.minLrs = perGroup(op, 'minLr', a.minLr ?? 0, optimizer.paramGroups.length, { min: 0 });
    this.eps = checkNumber(op, 'eps', a.eps ?? 1e-8, { min: 0 });
    this.best = this.worst();
  }

  private worst(): number {
    return this.mode === 'min' ? Number.POSITIVE_INFINITY : Number.NEGATIVE_INFINITY;
  }

  private isBetter(a: number): boolean {
    const t = this.threshold;
    if (this.mode === 'min') return this.thresholdMode === 'rel' ? a < this.best * (1 - t) : a < this.best - t;
    return this.thresholdMode === 'rel' ? a > this.best * (t + 1) : a > this.best + t;
  }

  /** One epoch's metric (a number; NaN counts as no improvement, as in PyTorch). */
  step(metric: number): void {
    const op = 'ReduceLROnPlateau.step';
    if ((metric as unknown) instanceof Tensor)
      throw argError(op, 'metric must be a number: read the tensor first (`await loss.item()`), since reading it is a sync point');
    if (typeof metric !== 'number') throw argError(op, `metric must be a number, got ${describe(metric)}`);
    this.lastEpoch++;
    if (this.isBetter(metric)) {
      this.best = metric;
      this.numBadEpochs = 0;
    } else this.numBadEpochs++;
    if (this.cooldownCounter > 0) {
      this.cooldownCounter--;
      this.numBadEpochs = 0; // bad epochs in cooldown are not counted
    }
    if (this.numBadEpochs > this.patience) {
      this.optimizer.paramGroups.forEach((g, i) => {
        const next = Math.max(g.lr * this.factor, this.minLrs[i]);
        if (g.lr - next > this.eps) g.lr = next;
      });
      this.cooldownCounter = this.cooldown;
      this.numBadEpochs = 0;
    }
  }

  getLastLr(): number[] {
    return this.optimizer.paramGroups.map((g) => g.lr);
  }

  /** Every setting and counter (best is ±Infinity before the first step; JSON turns it into null, which loads back). */
  stateDict(): Omit<SchedulerStateDict, 'baseLrs'> {
    return stateOf(this, this.getLastLr()) as SchedulerStateDict;
  }

  /** Restores stateDict()'s result; the lrs come back with the optimizer's own loadStateDict, as in PyTorch. */
  loadStateDict(state: Record<string, unknown>): void {
    const op = 'ReduceLROnPlateau.loadStateDict';
    if (state !== null && typeof state === 'object' && !Array.isArray(state)) {
      for (const k of ['best'] as const)
        if (state[k] !== undefined && state[k] !== null && typeof state[k] !== 'number')
          throw flockError('ERR_STATE_DICT', op, `'${k}' must be a number, got ${describe(state[k])}`);
      if (state.mode !== undefined && state.mode !== 'min' && state.mode !== 'max')
        throw flockError('ERR_STATE_DICT', op, `mode must be 'min' or 'max', got ${describe(state.mode)}`);
    }
    // best may be null (JSON's Infinity): it is the worst value of the loaded mode.
    restore(op, this, state, this.optimizer.paramGroups.length);
    if ((this.best as number | null) === null) this.best = this.worst();
  }
}
