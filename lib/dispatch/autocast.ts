/**
 * Autocast (automatic mixed precision), as torch.autocast: inside a region, each op casts its
 * floating inputs by the policy its manifest entry declares (`autocast` in lib/manifest):
 * 'lower' ops (matmul, linear, conv, attention) run in the region's low dtype, 'f32' ops (softmax,
 * norms, losses, exp, log, pow, sum, mean, ...) run in f32, 'promote' ops run in the widest input
 * dtype, 'none' ops are left alone. f64 tensors are never cast, as in PyTorch.
 *
 * The casts are ordinary differentiable `to()` ops, so backward runs each op's gradient in the
 * dtype its forward used and casts the gradient back to the input's dtype. matmul and linear cast
 * nothing (autocastLowering): their GEMMs round f32 operands while packing them and write each
 * gradient in its operand's dtype, the same values with no cast tensors. Casts of leaves that
 * require grad (parameters) are cached for the outermost region, so a weight used by several ops
 * is cast once; a cached cast is redone when the parameter has been written since.
 */
import { Tensor } from '../tensor';
import type { CanonicalDType } from '../dtype';
import { canonicalDType } from '../dtype';
import { argError, checkOptions, describe, flockError } from '../errors';
import { checkBool } from '../validate';
import { adopt, keep } from '../memory';
import { versionOf } from './version';
import type { AutocastPolicy } from '../manifest/types';
import { manifest } from '../manifest/index';

export type AutocastDevice = 'cpu' | 'cuda';
export type AutocastDType = 'bf16' | 'f16';

export interface AutocastOptions {
  /** The device type whose ops the region affects: 'cpu' or 'cuda' (every CUDA device). */
  device: AutocastDevice;
  /** The low dtype of 'lower' ops: 'bf16' or 'f16' (PyTorch's names accepted); default bf16 on the CPU, f16 on CUDA. */
  dtype?: AutocastDType | 'bfloat16' | 'float16' | 'half';
  /** false turns autocast off for the device inside this region (default true). */
  enabled?: boolean;
  /** Cache the casts of parameters within the outermost region (default true). */
  cacheEnabled?: boolean;
}

/** The autocast state of one device type at one moment: what checkpointing records and restores. */
export interface AutocastState {
  readonly device: AutocastDevice;
  readonly dtype: AutocastDType;
  readonly enabled: boolean;
  readonly cacheEnabled: boolean;
}

interface CachedCast {
  readonly version: number;
  readonly cast: Tensor;
}

const regions: AutocastState[] = [];
// Parameter casts of the current outermost region, by parameter and dtype; kept from inner tidy
// scopes while the region lasts (the graph may still read them), then adopted by the scope open
// where the outermost region exits (see leave).
let cache = new Map<Tensor, Map<CanonicalDType, CachedCast>>();
// Every cast the cache made in the current outermost region (also those a later version replaced).
let made: Tensor[] = [];
let suspended = 0;

/** A region entered by {@link autocast}'s scope form: leave it with exit() or `using`. */
export class AutocastScope {
  #open = true;
  constructor(readonly state: AutocastState) {}

  /** Leaves the region; regions are left innermost first. */
  exit(): void {
    if (!this.#open) return;
    if (regions[regions.length - 1] !== this.state)
      throw flockError('ERR_ARG', 'autocast', 'autocast regions must be exited innermost first');
    this.#open = false;
    leave();
  }

  [Symbol.dispose](): void {
    this.exit();
  }
}

function enter(state: AutocastState): void {
  regions.push(state);
}

// Leaving the outermost region hands its cached casts to the tidy scope open there, as if made in
// it: a training step's tidy frees them with its activations instead of leaving them to the GC.
function leave(): void {
  regions.pop();
  if (regions.length > 0) return;
  for (const cast of made) adopt(cast);
  made = [];
  cache = new Map();
}

function parseOptions(op: string, options: unknown): AutocastState {
  if (options === null || typeof options !== 'object' || Array.isArray(options))
    throw argError(op, `expected options { device, dtype?, enabled?, cacheEnabled? }, got ${describe(options)}`);
  const o = checkOptions(op, options as AutocastOptions, ['device', 'dtype', 'enabled', 'cacheEnabled']);
  if (o.device !== 'cpu' && o.device !== 'cuda') throw argError(op, `device must be 'cpu' or 'cuda', got ${describe(o.device)}`);
  const dtype = o.dtype === undefined ? (o.device === 'cpu' ? 'bf16' : 'f16') : canonicalDType(o.dtype);
  if (dtype !== 'bf16' && dtype !== 'f16')
    throw flockError('ERR_DTYPE', op, `dtype must be bf16 or f16 (or bfloat16, float16, half), got ${describe(o.dtype)}`);
  const enabled = o.enabled === undefined ? true : checkBool(op, 'enabled', o.enabled);
  const cacheEnabled = o.cacheEnabled === undefined ? true : checkBool(op, 'cacheEnabled', o.cacheEnabled);
  return { device: o.device, dtype, enabled, cacheEnabled };
}

/**
 * Runs `fn` with autocast on (or, `enabled: false`, off) for `device`, and returns its result;
 * regions nest, the innermost for a device type wins. Without `fn`, enters the region and returns
 * a scope to leave it: `using _ = fl.autocast({ device: 'cpu' })`, or call `scope.exit()` in a
 * `finally`. Run backward and the optimizer step outside the region, as in PyTorch.
 */
export function autocast<T>(options: AutocastOptions, fn: () => T): T;
export function autocast(options: AutocastOptions): AutocastScope;
export function autocast<T>(options: AutocastOptions, fn?: () => T): T | AutocastScope {
  const state = parseOptions('autocast', options);
  if (fn === undefined) {
    enter(state);
    return new AutocastScope(state);
  }
  if (typeof fn !== 'function') throw argError('autocast', `expected a function, got ${describe(fn)}`);
  enter(state);
  let result: T;
  try {
    result = fn();
  } finally {
    leave();
  }
  if (result instanceof Promise)
    throw argError(
      'autocast',
      'the function must not be async: the region would end before its ops run; await outside, or use the scope form',
    );
  return result;
}

/** The innermost region's state for `device`, or null when no region covers it. */
export function autocastState(device: AutocastDevice): AutocastState | null {
  for (let i = regions.length - 1; i >= 0; i--) if (regions[i].device === device) return regions[i];
  return null;
}

/** Whether autocast is on for `device` right now. */
export function isAutocastEnabled(device: AutocastDevice = 'cpu'): boolean {
  return suspended === 0 && (autocastState(device)?.enabled ?? false);
}

/** @internal Runs `fn` with `states` (from {@link autocastState}) in force: checkpoint's recompute. */
export function withAutocastStates<T>(states: readonly (AutocastState | null)[], fn: () => T): T {
  const saved = suspended;
  suspended = 0;
  let entered = 0;
  try {
    for (const s of states)
      if (s) {
        enter(s);
        entered++;
      }
    return fn();
  } finally {
    for (let i = 0; i < entered; i++) leave();
    suspended = saved;
  }
}

/** @internal Runs `fn` with autocast off everywhere (backward passes, as PyTorch's engine thread). */
export function withoutAutocast<T>(fn: () => T): T {
  suspended++;
  try {
    return fn();
  } finally {
    suspended--;
  }
}

let policies: Map<string, AutocastPolicy> | null = null;
let policiesFor = -1;

/** The policy the op manifest declares for `op`; 'none' for an op it does not list. */
export function autocastPolicy(op: string): AutocastPolicy {
  if (policies === null || policiesFor !== manifest.length) {
    policies = new Map(manifest.map((d) => [d.name, d.autocast]));
    policiesFor = manifest.length;
  }
  return policies.get(op) ?? 'none';
}

function deviceType(t: Tensor): AutocastDevice {
  return t.device.startsWith('cpu') ? 'cpu' : 'cuda';
}

// f32, bf16 and f16 take part; f64 (and every integer dtype) is left as it is, as in PyTorch.
function eligible(t: unknown): t is Tensor {
  return t instanceof Tensor && !t.isDisposed && (t.dtype === 'f32' || t.dtype === 'bf16' || t.dtype === 'f16');
}

function castCached(t: Tensor, dtype: CanonicalDType, useCache: boolean): Tensor {
  if (t.dtype === dtype) return t;
  if (!(useCache && t.isLeaf && t.requiresGrad)) return t.to(dtype);
  let byDType = cache.get(t);
  if (!byDType) cache.set(t, (byDType = new Map()));
  const version = versionOf(t).value;
  const hit = byDType.get(dtype);
  if (hit && hit.version === version && !hit.cast.isDisposed) return hit.cast;
  const cast = keep(t.to(dtype));
  made.push(cast);
  byDType.set(dtype, { version, cast });
  return cast;
}

/**
 * For 'lower' ops whose kernels round f32 operands themselves (the GEMMs of matmul and linear):
 * inside an enabled region for their device, the low dtype and how to bring operands to it (casts
 * cached as autocastArgs caches them) — f32 operands go to the kernel uncast, which multiplies
 * them as if cast. null where autocastArgs would leave the arguments alone, or when one is f64
 * (never cast, so the op sees the mix and refuses it as it would under autocastArgs).
 */
export function autocastLowering(op: string, ...args: readonly unknown[]): Lowering | null {
  if (regions.length === 0 || suspended > 0 || autocastPolicy(op) !== 'lower') return null;
  const first = args.find(eligible);
  if (!first) return null;
  const state = autocastState(deviceType(first));
  if (!state?.enabled) return null;
  for (const a of args) if (a instanceof Tensor && !eligible(a)) return null;
  return new Lowering(state.dtype, state.cacheEnabled);
}

/** What {@link autocastLowering} returns: the region's low dtype and how operands reach it. */
class Lowering {
  constructor(
    readonly dtype: AutocastDType,
    private readonly cacheEnabled: boolean,
  ) {}

  /** A GEMM operand as the kernel takes it: f32 as it is, anything else cast to `dtype`. */
  operand(t: Tensor): Tensor {
    return t.dtype === 'f32' ? t : this.cast(t);
  }

  /** `t` cast to `dtype` (an operand the kernel does not round itself, such as linear's bias). */
  cast(t: Tensor): Tensor {
    return castCached(t, this.dtype, this.cacheEnabled);
  }
}

/**
 * The hook every op with an autocast policy calls first: returns its tensor arguments cast as the
 * manifest's policy for `op` asks, inside an enabled region for their device (unchanged
 * otherwise, at the cost of one check). Non-tensor and null arguments pass through.
 */
export function autocastArgs<T extends readonly unknown[]>(op: string, ...args: T): T {
  if (regions.length === 0 || suspended > 0) return args;
  const first = args.find(eligible);
  if (!first) return args;
  const state = autocastState(deviceType(first));
  if (!state?.enabled) return args;
  const policy = autocastPolicy(op);
  let to: CanonicalDType;
  if (policy === 'lower') to = state.dtype;
  else if (policy === 'f32') to = 'f32';
  else if (policy === 'promote') {
    const dts = new Set(args.filter(eligible).map((a) => a.dtype));
    if (dts.size < 2) return args;
    to = dts.has('f32') || (dts.has('bf16') && dts.has('f16')) ? 'f32' : [...dts][0];
  } else return args;
  return args.map((a) => (eligible(a) ? castCached(a, to, state.cacheEnabled) : a)) as unknown as T;
}
