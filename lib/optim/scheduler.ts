/**
 * Learning-rate schedulers in PyTorch's chainable form: each step() updates every group's lr from
 * its current value, so several schedulers can drive one optimizer (see ChainedScheduler).
 */
import { Optimizer } from './optimizer';
import { argError, checkOptions, describe, flockError } from '../errors';
import { checkInt, checkNumber } from '../validate';

export type AnyOptimizer = Optimizer<{ lr: number }>;

/**
 * A scheduler's full state, as PyTorch's: every field but the optimizer (lastEpoch, baseLrs and
 * the subclass's settings such as gamma or tMax), plus the lrs it last set.
 */
export type SchedulerStateDict = { lastEpoch: number; baseLrs: number[]; lastLrs: number[] } & Record<string, unknown>;

export function stateOf(s: object, lastLrs: number[]): SchedulerStateDict {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(s)) if (k !== 'optimizer' && typeof v !== 'function') out[k] = Array.isArray(v) ? [...v] : v;
  return { ...out, lastLrs } as SchedulerStateDict;
}

export function restore(op: string, target: object, state: Record<string, unknown>, groups: number): void {
  if (!state || typeof state !== 'object' || Array.isArray(state)) throw argError(op, `expected a state object, got ${describe(state)}`);
  if (state.lastEpoch !== undefined && (!Number.isSafeInteger(state.lastEpoch) || (state.lastEpoch as number) < 0))
    throw flockError('ERR_STATE_DICT', op, `lastEpoch must be a non-negative integer, got ${String(state.lastEpoch)}`);
  if (state.baseLrs !== undefined && (!Array.isArray(state.baseLrs) || state.baseLrs.length !== groups))
    throw flockError('ERR_STATE_DICT', op, `baseLrs must hold one lr per parameter group (${groups})`);
  // Every entry is checked before any is written, so a bad state leaves the scheduler as it was.
  const own = target as Record<string, unknown>;
  const entries = Object.entries(state).filter(([k]) => k !== 'optimizer' && k !== 'lastLrs' && k !== 'schedulers');
  for (const [k, v] of entries) {
    if (!Object.hasOwn(own, k)) throw flockError('ERR_STATE_DICT', op, `unexpected key '${k}' (a state of another scheduler type?)`);
    const kind = (x: unknown) => (Array.isArray(x) ? 'array' : x === null ? 'null' : typeof x);
    if (own[k] !== null && v !== null && kind(own[k]) !== kind(v))
      throw flockError('ERR_STATE_DICT', op, `'${k}' must be ${kind(own[k])}, got ${describe(v)}`);
  }
  for (const [k, v] of entries) own[k] = Array.isArray(v) ? [...v] : v;
}

/**
 * A scheduler's settings given as PyTorch's keyword arguments: positional values, then optionally
 * an options object (`(opt, 10, { gamma: 0.5 })`, `(opt, { stepSize: 10, gamma: 0.5 })`). Returns
 * every setting by name (undefined where not given); a setting given both ways is ERR_ARG, as is
 * an unknown option.
 */
export function settings(op: string, args: readonly unknown[], names: readonly string[]): Record<string, unknown> {
  const plain = (a: unknown) => a !== null && typeof a === 'object' && [Object.prototype, null].includes(Object.getPrototypeOf(a));
  const at = args.findIndex(plain);
  const positional = at < 0 ? args : args.slice(0, at);
  if (at >= 0 && args.slice(at + 1).some((a) => a !== undefined)) throw argError(op, 'the options object must come last');
  if (positional.length > names.length)
    throw argError(op, `takes at most ${names.length} settings after the optimizer (${names.join(', ')}), got ${positional.length}`);
  const out: Record<string, unknown> = Object.fromEntries(names.map((n, i) => [n, positional[i]]));
  if (at < 0) return out;
  for (const [k, v] of Object.entries(checkOptions(op, args[at] as object, names))) {
    if (out[k] !== undefined) throw argError(op, `${k} is given twice, as an argument and as an option`);
    out[k] = v;
  }
  return out;
}

export abstract class LRScheduler {
  /** Steps taken so far (PyTorch's last_epoch); 0 after construction. */
  lastEpoch = 0;
  readonly baseLrs: number[];

  constructor(readonly optimizer: AnyOptimizer) {
    if (!(optimizer instanceof Optimizer))
      throw argError(new.target.name, `optimizer must be an fl.optim Optimizer, got ${describe(optimizer)}`);
    this.baseLrs = optimizer.paramGroups.map((g) => g.lr);
  }

  /** Applies step 0; subclasses call it last in their constructor, once their fields are set. */
  protected start(): void {
    this.apply();
  }

  /** The next lr of group `i` given its current one (at this.lastEpoch). */
  protected abstract nextLr(current: number, i: number): number;

  private apply(): void {
    this.optimizer.paramGroups.forEach((g, i) => (g.lr = this.nextLr(g.lr, i)));
  }

  step(): void {
    this.lastEpoch++;
    this.apply();
  }

  getLastLr(): number[] {
    return this.optimizer.paramGroups.map((g) => g.lr);
  }

  stateDict(): SchedulerStateDict {
    return stateOf(this, this.getLastLr());
  }

  /**
   * Restores lastEpoch, baseLrs and the settings. The lrs themselves live in the optimizer's
   * parameter groups and come back with its loadStateDict, as in PyTorch.
   */
  loadStateDict(s: Partial<SchedulerStateDict> & { lastEpoch: number }): void {
    restore(`${this.constructor.name}.loadStateDict`, this, s, this.optimizer.paramGroups.length);
  }
}

/** Multiplies the lr by gamma every stepSize steps. */
export class StepLR extends LRScheduler {
  readonly stepSize: number;
  readonly gamma: number;
  /** `new StepLR(opt, 10, 0.5)` or, as PyTorch's keyword arguments, `new StepLR(opt, { stepSize: 10, gamma: 0.5 })`. */
  constructor(optimizer: AnyOptimizer, options: { stepSize: number; gamma?: number });
  constructor(optimizer: AnyOptimizer, stepSize: number, gamma?: number | { gamma?: number });
  constructor(optimizer: AnyOptimizer, ...args: unknown[]) {
    super(optimizer);
    const a = settings('StepLR', args, ['stepSize', 'gamma']);
    this.stepSize = checkInt('StepLR', 'stepSize', a.stepSize, 1);
    this.gamma = checkNumber('StepLR', 'gamma', a.gamma ?? 0.1, { min: 0 });
    this.start();
  }
  protected nextLr(lr: number): number {
    return this.lastEpoch === 0 || this.lastEpoch % this.stepSize !== 0 ? lr : lr * this.gamma;
  }
}

/** Multiplies the lr by gamma at each milestone step. */
export class MultiStepLR extends LRScheduler {
  readonly milestones: number[];
  readonly gamma: number;
  /** `new MultiStepLR(opt, [30, 80], 0.1)` or `new MultiStepLR(opt, { milestones: [30, 80], gamma: 0.1 })`. */
  constructor(optimizer: AnyOptimizer, options: { milestones: number[]; gamma?: number });
  constructor(optimizer: AnyOptimizer, milestones: number[], gamma?: number | { gamma?: number });
  constructor(optimizer: AnyOptimizer, ...args: unknown[]) {
    super(optimizer);
    const a = settings('MultiStepLR', args, ['milestones', 'gamma']);
    const milestones = a.milestones;
    if (!Array.isArray(milestones))
      throw argError('MultiStepLR', `milestones must be an array of step numbers, got ${describe(milestones)}`);
    milestones.forEach((m, i) => checkInt('MultiStepLR', `milestones[${i}]`, m, 1));
    this.milestones = milestones;
    this.gamma = checkNumber('MultiStepLR', 'gamma', a.gamma ?? 0.1, { min: 0 });
    this.start();
  }
  protected nextLr(lr: number): number {
    const hits = this.milestones.filter((m) => m === this.lastEpoch).length;
    return lr * this.gamma ** hits;
  }
}

export class ExponentialLR extends LRScheduler {
  readonly gamma: number;
  /** `new ExponentialLR(opt, 0.9)` or `new ExponentialLR(opt, { gamma: 0.9 })`. */
  constructor(optimizer: AnyOptimizer, gamma: number | { gamma: number });
  constructor(optimizer: AnyOptimizer, ...args: unknown[]) {
    super(optimizer);
    const a = settings('ExponentialLR', args, ['gamma']);
    this.gamma = checkNumber('ExponentialLR', 'gamma', a.gamma, { min: 0 });
    this.start();
  }
  protected nextLr(lr: number): number {
    return this.lastEpoch === 0 ? lr : lr * this.gamma;
  }
}

/** Cosine from the base lr down to etaMin over tMax steps (PyTorch's recursive form). */
export class CosineAnnealingLR extends LRScheduler {
  readonly tMax: number;
  readonly etaMin: number;
  /** `new CosineAnnealingLR(opt, 100, 1e-5)` or `new CosineAnnealingLR(opt, { tMax: 100, etaMin: 1e-5 })` (PyTorch's T_max, eta_min). */
  constructor(optimizer: AnyOptimizer, options: { tMax: number; etaMin?: number });
  constructor(optimizer: AnyOptimizer, tMax: number, etaMin?: number | { etaMin?: number });
  constructor(optimizer: AnyOptimizer, ...args: unknown[]) {
    super(optimizer);
    const a = settings('CosineAnnealingLR', args, ['tMax', 'etaMin']);
    this.tMax = checkInt('CosineAnnealingLR', 'tMax', a.tMax, 1);
    this.etaMin = checkNumber('CosineAnnealingLR', 'etaMin', a.etaMin ?? 0, { min: 0 });
    this.start();
  }
  protected nextLr(lr: number, i: number): number {
    const e = this.lastEpoch,
      T = this.tMax,
      base = this.baseLrs[i];
    if (e === 0) return lr;
    if ((e - 1 - T) % (2 * T) === 0) return lr + ((base - this.etaMin) * (1 - Math.cos(Math.PI / T))) / 2;
    return ((1 + Math.cos((Math.PI * e) / T)) / (1 + Math.cos((Math.PI * (e - 1)) / T))) * (lr - this.etaMin) + this.etaMin;
  }
}

/** Linear warm-up: the lr factor grows from startFactor to endFactor over totalIters steps. */
export class LinearWarmup extends LRScheduler {
  readonly totalIters: number;
  readonly startFactor: number;
  readonly endFactor: number;
  /** `new LinearWarmup(opt, 5, 1 / 3, 1)` or `new LinearWarmup(opt, { totalIters: 5, startFactor: 0.1 })` (PyTorch LinearLR's names). */
  constructor(optimizer: AnyOptimizer, options?: { totalIters?: number; startFactor?: number; endFactor?: number });
  constructor(
    optimizer: AnyOptimizer,
    totalIters?: number,
    startFactor?: number | { startFactor?: number; endFactor?: number },
    endFactor?: number | { endFactor?: number },
  );
  constructor(optimizer: AnyOptimizer, ...args: unknown[]) {
    super(optimizer);
    const a = settings('LinearWarmup', args, ['totalIters', 'startFactor', 'endFactor']);
    this.totalIters = checkInt('LinearWarmup', 'totalIters', a.totalIters ?? 5, 1);
    this.startFactor = checkNumber('LinearWarmup', 'startFactor', a.startFactor ?? 1 / 3, { above: 0, max: 1 });
    this.endFactor = checkNumber('LinearWarmup', 'endFactor', a.endFactor ?? 1, { min: 0, max: 1 });
    this.start();
  }
  protected nextLr(lr: number): number {
    const e = this.lastEpoch,
      s = this.startFactor,
      d = this.endFactor - this.startFactor;
    if (e === 0) return lr * s;
    if (e > this.totalIters) return lr;
    return lr * (1 + d / (this.totalIters * s + (e - 1) * d));
  }
}

/** Steps several schedulers together; their factors compose. */
export class ChainedScheduler {
  constructor(readonly schedulers: LRScheduler[]) {
    if (!Array.isArray(schedulers))
      throw argError('ChainedScheduler', `schedulers must be an array of LRSchedulers, got ${describe(schedulers)}`);
    if (!schedulers.length) throw argError('ChainedScheduler', 'expected at least one scheduler');
    schedulers.forEach((s, i) => {
      if (!(s instanceof LRScheduler)) throw argError('ChainedScheduler', `schedulers[${i}] must be an LRScheduler, got ${describe(s)}`);
      if (s.optimizer !== schedulers[0].optimizer)
        throw argError(
          'ChainedScheduler',
          `schedulers[${i}] drives a different optimizer than schedulers[0]; chained schedulers must share one`,
        );
    });
  }
  step(): void {
    for (const s of this.schedulers) s.step();
  }
  getLastLr(): number[] {
    return this.schedulers[this.schedulers.length - 1].getLastLr();
  }
  stateDict(): { schedulers: SchedulerStateDict[] } {
    return { schedulers: this.schedulers.map((s) => s.stateDict()) };
  }
  loadStateDict(state: { schedulers: SchedulerStateDict[] }): void {
    if (!state || !Array.isArray(state.schedulers) || state.schedulers.length !== this.schedulers.length)
      throw flockError('ERR_STATE_DICT', 'ChainedScheduler.loadStateDict', `expected the states of ${this.schedulers.length} schedulers`);
    this.schedulers.forEach((s, i) => s.loadStateDict(state.schedulers[i]));
  }
}
