/**
 * Optimizer: parameter groups (each with its own hyper-parameters), per-parameter state, zeroGrad
 * and state dicts, as torch.optim.Optimizer. Subclasses describe their hyper-parameters and state
 * in an {@link OptimizerSpec} (checked at construction, in every param group, at each step and on
 * load) and implement step().
 */
import { Tensor } from '../tensor';
import { keep } from '../memory';
import { zeroGrads } from '../autograd/zero_grad';
import { argError, checkOptions, describe, type ErrorCode, flockError } from '../errors';
import { native } from '../native';
import type { NativeTicket } from '../../types/native';
import { checkNumber } from '../validate';
import { isFloating } from '../dtype';
import { noGrad } from '../dispatch/grad_mode';
import { zeros } from '../ops/creation';

/** Whether `p` is trained through an f32 master weight (bf16 and f16 parameters). */
export function hasMaster(p: Tensor): boolean {
  return p.dtype === 'bf16' || p.dtype === 'f16';
}

/** The dtype of `p`'s optimizer state: f32 for bf16/f16 parameters, the parameter's own otherwise. */
export function stateDType(p: Tensor): 'f32' | 'f64' {
  return p.dtype === 'f64' ? 'f64' : 'f32';
}

/** Zeros shaped like `p` in its state dtype, kept past any tidy scope. */
export function zeroState(p: Tensor): Tensor {
  return keep(zeros([...p.shape], { dtype: stateDType(p), device: p.device }));
}

/**
 * The f32 master weight of a bf16/f16 parameter, made from the parameter on first use and kept in
 * the state as `masterParam` (saved and loaded with it). The optimizer updates the master and
 * writes it, rounded, to the parameter; the parameter itself is never read again.
 */
export function masterOf(p: Tensor, s: Record<string, Tensor | number>): Tensor {
  if (!s.masterParam) s.masterParam = keep(noGrad(() => p.detach().to('f32')));
  return s.masterParam as Tensor;
}

export type ParamGroup<H> = H & { params: Tensor[] };
export type ParamsArg<H> = Tensor[] | Iterable<Tensor> | Array<Partial<H> & { params: Iterable<Tensor> | Tensor }>;

export interface OptimizerStateDict {
  state: Record<number, Record<string, Tensor | number>>;
  paramGroups: Array<Record<string, unknown> & { params: number[] }>;
}

/** What a subclass accepts: its hyper-parameter names and checks, and its per-parameter state. */
export interface OptimizerSpec<H> {
  /** Every hyper-parameter an options object or param group may set. */
  readonly keys: readonly string[];
  /** Throws a coded error naming `op` when a complete set of hyper-parameters is invalid; `at` prefixes option names. */
  check(op: string, h: H, at: string): void;
  /** Per-parameter state entries: tensors shaped like the parameter, or the integer step count. */
  readonly state: Readonly<Record<string, 'tensor' | 'count'>>;
  /** State entries that must be present whenever a parameter has state. */
  readonly requiredState: readonly string[];
}

function stateDictError(op: string, detail: string): Error {
  return flockError('ERR_STATE_DICT', op, detail);
}

function sameShape(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((s, i) => s === b[i]);
}

/** Hyper-parameter values copied so that groups and state dicts never share arrays (betas). */
function copyHyper(h: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(h)) out[k] = Array.isArray(v) ? [...v] : v;
  return out;
}

export abstract class Optimizer<H extends { lr: number }> {
  readonly paramGroups: ParamGroup<H>[] = [];
  readonly #state = new Map<Tensor, Record<string, Tensor | number>>();
  /**
   * Per-parameter state (momentum buffers, moments, step counts), without what steps dropped by a
   * failed stream did to it (see transaction()).
   */
  get state(): Map<Tensor, Record<string, Tensor | number>> {
    if (this.#pending.length > 0 && !this.#inStep) this.settleSteps();
    return this.#state;
  }
  readonly #spec: OptimizerSpec<H>;

  constructor(
    params: ParamsArg<H>,
    readonly defaults: H,
    spec: OptimizerSpec<H>,
  ) {
    this.#spec = spec;
    const op = this.constructor.name;
    if (spec === null || typeof spec !== 'object' || typeof spec.check !== 'function')
      throw argError(op, `spec must be an optimizer spec (Optimizer is a base class: construct SGD, Adam or AdamW), got ${describe(spec)}`);
    spec.check(op, defaults, '');
    for (const g of paramGroupList(op, params)) this.addParamGroup(g as Partial<H> & { params: Iterable<Tensor> });
  }

  /** Adds a group of parameters with its own hyper-parameters (the rest from the defaults). */
  addParamGroup(group: Partial<H> & { params: Iterable<Tensor> | Tensor }): void {
    const op = this.constructor.name;
    const at = `paramGroups[${this.paramGroups.length}].`;
    if (group === null || typeof group !== 'object' || Array.isArray(group) || group instanceof Tensor)
      throw argError(op, `a param group must be an object { params, ...options }, got ${describe(group)}`);
    checkOptions(op, group, ['params', ...this.#spec.keys]);
    const raw = group.params as unknown;
    if (
      raw === undefined ||
      raw === null ||
      typeof raw !== 'object' ||
      (!(raw instanceof Tensor) && typeof (raw as Iterable<unknown>)[Symbol.iterator] !== 'function')
    )
      throw argError(op, `${at}params must be a tensor or an iterable of tensors, got ${describe(raw)}`);
    const params = raw instanceof Tensor ? [raw] : Array.from(raw as Iterable<unknown>);
    const seen = new Set(this.paramGroups.flatMap((g) => g.params));
    params.forEach((p, i) => {
      if (!(p instanceof Tensor)) throw argError(op, `${at}params[${i}] must be a Tensor, got ${describe(p)}`);
      if (p.isDisposed) throw flockError('ERR_DISPOSED', op, `${at}params[${i}] has been disposed`);
      if (!isFloating(p.dtype))
        throw flockError(
          'ERR_DTYPE',
          op,
          `${at}params[${i}] is ${p.dtype} [${p.shape.join(',')}]; optimizers update floating tensors (f32, f64, bf16, f16)`,
        );
      if (seen.has(p)) throw argError(op, 'some parameters appear in more than one parameter group');
      seen.add(p);
    });
    const g = {
      ...copyHyper(this.defaults as Record<string, unknown>),
      ...copyHyper(group as Record<string, unknown>),
      params,
    } as ParamGroup<H>;
    this.#spec.check(op, g, at);
    this.paramGroups.push(g);
  }

  /** Clears (setToNone, the default) or zeroes every parameter's gradient. */
  zeroGrad(setToNone = true): void {
    zeroGrads(
      this.paramGroups.flatMap((g) => g.params),
      setToNone,
    );
  }

  abstract step(): void;

  /** Steps queued but not yet known to have run: the state before each, and a ticket per device. */
  #pending: { before: Map<Tensor, Record<string, Tensor | number>>; tickets: NativeTicket[] }[] = [];
  #inStep = false; // queueing a step: its own changes are not rolled back half-way

  /**
   * Runs `body`, the queueing of one step, as a unit (fail-stop, see README "Execution"): a step
   * whose gradients are known to be never computed throws before anything changes, and a step its stream
   * dropped (the loss or backward queued before it failed) leaves no trace: the state it created
   * or counted (moments, step counts, masters) is put back as it was before the step, found by
   * tickets queued behind it and settled at the next step or stateDict(). The library's optimizers
   * call it from step(); a subclass of Optimizer may too.
   */
  protected transaction(op: string, body: () => void): void {
    this.settleSteps();
    const devices = new Set<string>();
    this.paramGroups.forEach((g, gi) =>
      g.params.forEach((p, i) => {
        const grad = p.grad;
        if (!grad || grad.isDisposed) return;
        const f = native.tensorFailure(grad.handle);
        // Not yet reported: the step is queued, its stream drops it, and settleSteps rolls it back.
        if (f?.known)
          throw flockError(f.code as ErrorCode, op, `the gradient of parameter ${i} of group ${gi} was never computed: ${f.message}`);
        devices.add(p.device);
      }),
    );
    const before = new Map<Tensor, Record<string, Tensor | number>>();
    for (const [p, st] of this.#state) before.set(p, { ...st });
    this.#inStep = true;
    try {
      body();
    } catch (e) {
      this.#restore(before);
      throw e;
    } finally {
      this.#inStep = false;
    }
    if (devices.size > 0) this.#pending.push({ before, tickets: [...devices].map((d) => native.streamTicket(d)) });
  }

  /**
   * Forgets the steps known to have run and rolls back the first one its stream dropped (with it,
   * every later one: they were queued behind it before the failure was reported).
   */
  protected settleSteps(): void {
    for (let i = 0; i < this.#pending.length; ) {
      const states = this.#pending[i].tickets.map((t) => native.ticketState(t));
      if (states.includes('dropped')) {
        this.#restore(this.#pending[i].before);
        this.#pending.length = i;
        return;
      }
      if (states.every((s) => s === 'ran')) this.#pending.splice(i, 1);
      else i++;
    }
  }

  #restore(before: Map<Tensor, Record<string, Tensor | number>>): void {
    this.#state.clear();
    for (const [p, st] of before) this.#state.set(p, st);
  }

  /**
   * The parameters of `group` that have a gradient, after checking (as `op`) the group's
   * hyper-parameters — they may have been edited since construction — and that every gradient
   * matches its parameter.
   */
  protected stepParams(op: string, gi: number): Tensor[] {
    const g = this.paramGroups[gi];
    this.#spec.check(op, g, `paramGroups[${gi}].`);
    const out: Tensor[] = [];
    g.params.forEach((p, i) => {
      const grad = p.grad;
      if (!grad) return;
      if (p.isDisposed || grad.isDisposed)
        throw flockError('ERR_DISPOSED', op, `parameter ${i} of group ${gi}${p.isDisposed ? '' : "'s gradient"} has been disposed`);
      if (grad.dtype !== p.dtype || grad.device !== p.device || !sameShape(grad.shape, p.shape))
        throw flockError(
          grad.dtype !== p.dtype ? 'ERR_DTYPE' : grad.device !== p.device ? 'ERR_DEVICE' : 'ERR_SHAPE',
          op,
          `the gradient of parameter ${i} of group ${gi} is ${grad.dtype} [${grad.shape.join(',')}] on ${grad.device}, ` +
            `the parameter ${p.dtype} [${p.shape.join(',')}] on ${p.device}`,
        );
      out.push(p);
    });
    return out;
  }

  /** Parameters are referred to by their index across all groups, as in PyTorch. */
  stateDict(): OptimizerStateDict {
    this.settleSteps();
    const index = new Map<Tensor, number>();
    const paramGroups = this.paramGroups.map((g) => {
      const { params, ...hyper } = g;
      return {
        ...copyHyper(hyper),
        params: params.map((p) => {
          const i = index.size;
          index.set(p, i);
          return i;
        }),
      };
    });
    const state: OptimizerStateDict['state'] = {};
    for (const [p, s] of this.state) {
      const i = index.get(p);
      if (i !== undefined) state[i] = { ...s };
    }
    return { state, paramGroups };
  }

  /**
   * Checks a state dict as {@link loadStateDict} does, changing nothing: what it would load (the
   * merged hyper-parameters per group and each parameter's state). checkpoint.load checks every
   * part of a checkpoint this way before it changes any.
   */
  checkStateDict(sd: OptimizerStateDict): { newHyper: H[]; entries: Array<[Tensor, Record<string, Tensor | number>]> } {
    const op = `${this.constructor.name}.loadStateDict`;
    if (sd === null || typeof sd !== 'object' || Array.isArray(sd))
      throw argError(op, `expected a state dict { state, paramGroups }, got ${describe(sd)}`);
    const { paramGroups: groups, state } = sd as Partial<OptimizerStateDict>;
    if (!Array.isArray(groups)) throw stateDictError(op, `paramGroups must be an array, got ${describe(groups)}`);
    if (state === null || typeof state !== 'object' || Array.isArray(state))
      throw stateDictError(op, `state must be an object, got ${describe(state)}`);
    if (groups.length !== this.paramGroups.length)
      throw stateDictError(op, `the state dict has ${groups.length} parameter groups, the optimizer ${this.paramGroups.length}`);

    // 1. Check the groups and work out the new hyper-parameters without touching the live ones.
    const byIndex = new Map<number, Tensor>();
    const newHyper = groups.map((sg, gi) => {
      const own = this.paramGroups[gi];
      if (sg === null || typeof sg !== 'object' || !Array.isArray(sg.params))
        throw stateDictError(op, `paramGroups[${gi}] must be an object with a params array of indices, got ${describe(sg)}`);
      if (sg.params.length !== own.params.length)
        throw stateDictError(
          op,
          `parameter group ${gi} has ${sg.params.length} parameters in the state dict, ${own.params.length} in the optimizer`,
        );
      sg.params.forEach((idx, k) => {
        if (!Number.isInteger(idx) || idx < 0)
          throw stateDictError(op, `paramGroups[${gi}].params[${k}] must be a parameter index, got ${describe(idx)}`);
        if (byIndex.has(idx)) throw stateDictError(op, `parameter index ${idx} appears more than once in paramGroups`);
        const p = own.params[k];
        byIndex.set(idx, p);
      });
      const { params: _ids, ...hyper } = sg;
      for (const key of Object.keys(hyper))
        if (!this.#spec.keys.includes(key))
          throw stateDictError(op, `paramGroups[${gi}] has unknown hyper-parameter '${key}'; accepted: ${this.#spec.keys.join(', ')}`);
      const { params: _own, ...ownHyper } = own;
      const merged = { ...copyHyper(ownHyper), ...copyHyper(hyper) } as unknown as H;
      this.#spec.check(op, merged, `paramGroups[${gi}].`);
      return merged;
    });

    // 2. Check every state entry.
    const entries: Array<[Tensor, Record<string, Tensor | number>]> = [];
    for (const [i, s] of Object.entries(state)) {
      const p = byIndex.get(Number(i));
      if (!p) throw stateDictError(op, `state for unknown parameter index ${i}`);
      if (s === null || typeof s !== 'object') throw stateDictError(op, `state[${i}] must be an object, got ${describe(s)}`);
      for (const need of this.#spec.requiredState)
        if (!(need in s)) throw stateDictError(op, `state[${i}] lacks '${need}' (has ${Object.keys(s).join(', ') || 'nothing'})`);
      for (const [k, v] of Object.entries(s)) {
        const kind = this.#spec.state[k];
        if (!kind) throw stateDictError(op, `state[${i}] has unknown entry '${k}'; accepted: ${Object.keys(this.#spec.state).join(', ')}`);
        if (kind === 'count') {
          checkNumber(op, `state[${i}].${k}`, v, { integer: true, min: 0 });
          continue;
        }
        if (!(v instanceof Tensor)) throw stateDictError(op, `state[${i}].${k} must be a Tensor, got ${describe(v)}`);
        if (v.isDisposed) throw flockError('ERR_DISPOSED', op, `state[${i}].${k} has been disposed`);
        if (!sameShape(v.shape, p.shape))
          throw flockError(
            'ERR_SHAPE',
            op,
            `state '${k}' of parameter ${i} has shape [${v.shape.join(',')}], parameter has [${p.shape.join(',')}]`,
          );
        if (v.dtype !== 'f32' && v.dtype !== 'f64' && v.dtype !== 'bf16' && v.dtype !== 'f16')
          throw flockError('ERR_DTYPE', op, `state '${k}' of parameter ${i} is ${v.dtype}, expected a floating dtype`);
      }
      entries.push([p, s]);
    }
    return { newHyper, entries };
  }

  /**
   * Loads hyper-parameters and state saved by {@link stateDict}. Everything is checked first
   * (group counts and sizes, parameter indices, hyper-parameter values, state entries' kinds,
   * shapes and dtypes); a state dict that fails leaves the optimizer exactly as it was.
   */
  loadStateDict(sd: OptimizerStateDict): void {
    const { newHyper, entries } = this.checkStateDict(sd);

    // 3. Copy the state (the only step that allocates); on failure free what was made and stop.
    const made: Tensor[] = [];
    const next = new Map<Tensor, Record<string, Tensor | number>>();
    try {
      for (const [p, s] of entries) {
        const copy: Record<string, Tensor | number> = {};
        for (const [k, v] of Object.entries(s)) {
          if (typeof v === 'number') copy[k] = v;
          else {
            const t = keep(v.to(stateDType(p)).to(p.device).clone());
            made.push(t);
            copy[k] = t;
          }
        }
        next.set(p, copy);
      }
    } catch (e) {
      for (const t of made) t.dispose();
      throw e;
    }

    // 4. Commit.
    newHyper.forEach((h, gi) => Object.assign(this.paramGroups[gi], h));
    this.state.clear();
    for (const [p, s] of next) this.state.set(p, s);
  }
}

/**
 * An optimizer's `params` argument as a list of groups: an iterable of tensors is one group
 * `{ params }`; an iterable of objects is taken as param groups (each checked by its consumer).
 */
export function paramGroupList(op: string, params: unknown): object[] {
  if (
    params instanceof Tensor ||
    params === null ||
    typeof params !== 'object' ||
    typeof (params as Iterable<unknown>)[Symbol.iterator] !== 'function'
  )
    throw argError(op, `params must be an iterable of tensors or of param groups ({ params, ...options }), got ${describe(params)}`);
  const list = Array.from(params as Iterable<unknown>);
  if (list.length === 0) throw argError(op, 'optimizer got an empty parameter list');
  if (list.every((x) => x instanceof Tensor)) return [{ params: list as Tensor[] }];
  list.forEach((g, i) => {
    if (g instanceof Tensor || g === null || typeof g !== 'object')
      throw argError(op, `params must be all tensors or all param groups, got ${describe(g)} at index ${i}`);
  });
  return list as object[];
}
