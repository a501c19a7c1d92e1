/**
 * GradScaler, as torch.amp.GradScaler: multiplies the loss by a scale so that small f16 gradients
 * do not flush to zero, unscales the gradients in one fused kernel per device (which also raises a
 * device-side flag on any inf/NaN, so nothing is read back before the step), skips the optimizer
 * step when the flag is up, and adapts the scale: × backoffFactor after an overflow, ×
 * growthFactor after `growthInterval` clean steps in a row. Under a process group, `step` takes
 * the maximum of the flag over every rank first, so all ranks skip or step together.
 */
import { native } from '../native';
import type { Tensor } from '../tensor';
import { zeros } from '../ops/creation';
import { keep } from '../memory';
import { noGrad } from '../dispatch/grad_mode';
import { argError, checkOptions, describe, flockError } from '../errors';
import { checkBool, checkNumber } from '../validate';
import type { Optimizer } from '../optim/optimizer';
import { allReduce, getWorldSize, isInitialized } from '../distributed/process_group';

export interface GradScalerOptions {
  /** The first scale (default 2^16). */
  initScale?: number;
  /** Factor the scale grows by after `growthInterval` steps without inf/NaN (default 2, > 1). */
  growthFactor?: number;
  /** Factor the scale shrinks by after a step with inf/NaN (default 0.5, in (0, 1)). */
  backoffFactor?: number;
  /** Clean steps in a row before the scale grows (default 2000). */
  growthInterval?: number;
  /** false makes every method a pass-through (scale 1, plain steps), as PyTorch (default true). */
  enabled?: boolean;
}

/** What {@link GradScaler.stateDict} saves (PyTorch's entries, in camelCase). */
export interface GradScalerStateDict {
  scale: number;
  growthFactor: number;
  backoffFactor: number;
  growthInterval: number;
  growthTracker: number;
}

interface PerOptimizer {
  stage: 'unscaled' | 'stepped';
  /** One 0-d f32 flag per device the gradients live on (1 when any was inf/NaN). */
  flags: Tensor[];
  foundInf?: boolean;
  /** While step() reads the flags: an update() now would not know whether to back off. */
  pending?: boolean;
}

export class GradScaler {
  #scale: number;
  #growthFactor: number;
  #backoffFactor: number;
  #growthInterval: number;
  #growthTracker = 0;
  readonly #enabled: boolean;
  #per = new Map<Optimizer<{ lr: number }>, PerOptimizer>();

  constructor(options: GradScalerOptions = {}) {
    const o = checkOptions('GradScaler', options, ['initScale', 'growthFactor', 'backoffFactor', 'growthInterval', 'enabled']);
    this.#scale = checkNumber('GradScaler', 'initScale', o.initScale ?? 2 ** 16, { above: 0 });
    this.#growthFactor = checkNumber('GradScaler', 'growthFactor', o.growthFactor ?? 2, { above: 1 });
    this.#backoffFactor = checkNumber('GradScaler', 'backoffFactor', o.backoffFactor ?? 0.5, { above: 0, below: 1 });
    this.#growthInterval = checkNumber('GradScaler', 'growthInterval', o.growthInterval ?? 2000, { integer: true, min: 1 });
    this.#enabled = o.enabled === undefined ? true : checkBool('GradScaler', 'enabled', o.enabled);
  }

  isEnabled(): boolean {
    return this.#enabled;
  }

  /** The current scale (1 when disabled). */
  getScale(): number {
    return this.#enabled ? this.#scale : 1;
  }

  getGrowthTracker(): number {
    return this.#growthTracker;
  }

  /** `outputs` times the scale (unchanged when disabled); a tensor or an array of tensors. */
  scale(outputs: Tensor): Tensor;
  scale(outputs: Tensor[]): Tensor[];
  scale(outputs: Tensor | Tensor[]): Tensor | Tensor[] {
    if (Array.isArray(outputs)) return outputs.map((t) => this.scale(t));
    if (outputs === null || typeof outputs !== 'object' || !('handle' in outputs))
      throw argError('GradScaler.scale', `expected a Tensor or an array of tensors, got ${describe(outputs)}`);
    return this.#enabled ? outputs.mul(this.#scale) : outputs;
  }

  /**
   * Divides the gradients of `optimizer`'s parameters by the scale, in place, with one fused
   * kernel per device that also records whether any was inf or NaN. Call it before clipping; at
   * most once per optimizer between updates (step() calls it when you have not).
   */
  unscale_(optimizer: Optimizer<{ lr: number }>): void {
    if (!this.#enabled) return;
    const op = 'GradScaler.unscale_';
    const st = this.#per.get(optimizer);
    if (st?.stage === 'unscaled')
      throw flockError('ERR_ARG', op, 'unscale_() has already been called on this optimizer since the last update()');
    if (st?.stage === 'stepped') throw flockError('ERR_ARG', op, 'unscale_() is being called after step()');
    const byDevice = new Map<string, Tensor[]>();
    for (const g of optimizer.paramGroups)
      for (const p of g.params) {
        const grad = p.grad;
        if (!grad) continue;
        if (grad.isDisposed) throw flockError('ERR_DISPOSED', op, 'a parameter gradient has been disposed');
        let list = byDevice.get(grad.device);
        if (!list) byDevice.set(grad.device, (list = []));
        list.push(grad);
      }
    const flags: Tensor[] = [];
    noGrad(() => {
      for (const [device, grads] of byDevice) {
        const flag = keep(zeros([], { dtype: 'f32', device }));
        native.ampUnscale(
          grads.map((t) => t.handle),
          flag.handle,
          1 / this.#scale,
        );
        flags.push(flag);
      }
    });
    this.#per.set(optimizer, { stage: 'unscaled', flags });
  }

  /**
   * Unscales (unless unscale_ was called), then runs `optimizer.step()` unless a gradient was inf
   * or NaN — on any rank, under a process group. Resolves to whether the step was taken. The
   * flags are read here, asynchronously: the one point a host round trip is needed.
   */
  async step(optimizer: Optimizer<{ lr: number }>): Promise<boolean> {
    if (!this.#enabled) {
      optimizer.step();
      return true;
    }
    const op = 'GradScaler.step';
    if (this.#per.get(optimizer)?.stage === 'stepped')
      throw flockError('ERR_ARG', op, 'step() has already been called since the last update()');
    if (!this.#per.has(optimizer)) this.unscale_(optimizer);
    const st = this.#per.get(optimizer) as PerOptimizer;
    st.stage = 'stepped';
    st.pending = true;
    let found = false;
    try {
      for (const f of st.flags) {
        if (isInitialized() && getWorldSize() > 1) await allReduce(f, { op: 'max' }).wait();
        found = found || (await f.item()) !== 0;
        f.dispose();
      }
    } finally {
      st.pending = false;
    }
    st.flags = [];
    st.foundInf = found;
    if (!found) optimizer.step();
    return !found;
  }

  /**
   * Adapts the scale from the steps since the last update: × backoffFactor if any optimizer saw
   * inf/NaN (the growth count restarts), else one more clean step, × growthFactor when they reach
   * growthInterval. `newScale` sets the scale directly instead.
   */
  update(newScale?: number): void {
    if (!this.#enabled) return;
    const op = 'GradScaler.update';
    // PyTorch's `scaler.step(opt); scaler.update()` ported as written would update before the step
    // knew about an inf, and keep the scale where it must back off.
    if ([...this.#per.values()].some((s) => s.pending))
      throw flockError('ERR_ARG', op, 'a step() is still running: await scaler.step(optimizer) before update()');
    if (newScale !== undefined) {
      this.#scale = checkNumber(op, 'newScale', newScale, { above: 0 });
    } else {
      const steps = [...this.#per.values()].filter((s) => s.stage === 'stepped');
      if (steps.length === 0) throw flockError('ERR_ARG', op, 'no inf checks were recorded prior to update(): call step() first');
      if (steps.some((s) => s.foundInf)) {
        this.#scale *= this.#backoffFactor;
        this.#growthTracker = 0;
      } else if (++this.#growthTracker === this.#growthInterval) {
        this.#scale *= this.#growthFactor;
        this.#growthTracker = 0;
      }
    }
    for (const s of this.#per.values()) for (const f of s.flags) f.dispose();
    this.#per = new Map();
  }

  stateDict(): GradScalerStateDict {
    return {
      scale: this.getScale(),
      growthFactor: this.#growthFactor,
      backoffFactor: this.#backoffFactor,
      growthInterval: this.#growthInterval,
      growthTracker: this.#growthTracker,
    };
  }

  /** Restores what {@link stateDict} saved; every entry is checked before any is applied. */
  loadStateDict(sd: GradScalerStateDict): void {
    const op = 'GradScaler.loadStateDict';
    if (sd === null || typeof sd !== 'object' || Array.isArray(sd))
      throw flockError('ERR_STATE_DICT', op, `expected a state dict, got ${describe(sd)}`);
    const keys = ['scale', 'growthFactor', 'backoffFactor', 'growthInterval', 'growthTracker'] as const;
    for (const k of keys) if (!(k in sd)) throw flockError('ERR_STATE_DICT', op, `the state dict lacks '${k}'`);
    for (const k of Object.keys(sd))
      if (!(keys as readonly string[]).includes(k))
        throw flockError('ERR_STATE_DICT', op, `unknown entry '${k}'; accepted: ${keys.join(', ')}`);
    const scale = checkNumber(op, 'scale', sd.scale, { above: 0 });
    const growth = checkNumber(op, 'growthFactor', sd.growthFactor, { above: 1 });
    const backoff = checkNumber(op, 'backoffFactor', sd.backoffFactor, { above: 0, below: 1 });
    const interval = checkNumber(op, 'growthInterval', sd.growthInterval, { integer: true, min: 1 });
    const tracker = checkNumber(op, 'growthTracker', sd.growthTracker, { integer: true, min: 0 });
    this.#scale = scale;
    this.#growthFactor = growth;
    this.#backoffFactor = backoff;
    this.#growthInterval = interval;
    this.#growthTracker = tracker;
  }
}
