/**
 * Module: the base of every layer. Parameters, buffers and sub-modules are found the way PyTorch
 * finds them — by walking the module's own fields in definition order — so a layer only assigns
 * `this.weight = new Parameter(...)` or `this.fc = new Linear(...)`.
 */
import { inspect } from 'node:util';
import { Tensor } from '../tensor';
import { keep, tidy } from '../memory';
import { noGrad } from '../dispatch/grad_mode';
import { copy_ } from '../ops/elementwise';
import { Parameter } from './parameter';
import { zeroGrads } from '../autograd/zero_grad';
import { isDType, isFloating } from '../dtype';
import { argError, checkOptions, describe, flockError } from '../errors';
import { checkBool } from '../validate';
import { checkStateDict } from '../io/state_dict';

/** Moves or casts `t` to `target` (a device or dtype) keeping the object; no-op when it is there. */
function moveInPlace(t: Tensor, target: string): void {
  const moved = t.to(target);
  if (moved === t) return;
  t._adopt(moved);
  moved.dispose();
}

export abstract class Module {
  /** Whether the module is in training mode (Dropout and BatchNorm behave differently). */
  training = true;
  /** @internal buffers by name: non-trainable state saved in the state dict (running stats). */
  protected _buffers = new Map<string, Tensor | null>();

  /** Computes the module's output; call it directly: `model.forward(x)`. */
  abstract forward(...inputs: never[]): unknown;

  /** Registers a buffer (kept out of tidy scopes) readable as a state-dict entry. */
  registerBuffer(name: string, t: Tensor | null): void {
    if (typeof name !== 'string' || name === '' || name.includes('.'))
      throw argError('registerBuffer', `name must be a non-empty string without dots, got ${describe(name)}`);
    if (t !== null && !(t instanceof Tensor))
      throw argError('registerBuffer', `buffer '${name}' must be a Tensor or null, got ${describe(t)}`);
    this._buffers.set(name, t && keep(t));
  }

  getBuffer(name: string): Tensor | null {
    return this._buffers.get(name) ?? null;
  }

  /** Replaces a buffer's tensor (used by running-statistics updates and device moves). */
  setBuffer(name: string, t: Tensor | null): void {
    if (t !== null && !(t instanceof Tensor)) throw argError('setBuffer', `buffer '${name}' must be a Tensor or null, got ${describe(t)}`);
    if (!this._buffers.has(name))
      throw flockError('ERR_ARG', 'setBuffer', `no buffer named '${name}'; buffers: ${[...this._buffers.keys()].join(', ') || 'none'}`);
    this._buffers.set(name, t && keep(t));
  }

  /** Direct sub-modules and parameters, in field order. */
  protected *ownEntries(): Generator<[string, Parameter | Module]> {
    for (const [k, v] of Object.entries(this)) {
      if (k.startsWith('_')) continue;
      if (v instanceof Parameter || v instanceof Module) yield [k, v];
    }
  }

  *namedChildren(): Generator<[string, Module]> {
    for (const [k, v] of this.ownEntries()) if (v instanceof Module) yield [k, v];
  }

  *children(): Generator<Module> {
    for (const [, m] of this.namedChildren()) yield m;
  }

  /** This module and every descendant, each once, with dotted names ('' for this one). */
  *namedModules(prefix = '', seen = new Set<Module>()): Generator<[string, Module]> {
    if (seen.has(this)) return;
    seen.add(this);
    yield [prefix, this];
    for (const [k, m] of this.namedChildren()) yield* m.namedModules(prefix ? `${prefix}.${k}` : k, seen);
  }

  *modules(): Generator<Module> {
    for (const [, m] of this.namedModules()) yield m;
  }

  /**
   * Parameters with dotted names; a parameter shared by two modules (tied weights) is listed once,
   * under its first name, unless `removeDuplicate` is false (PyTorch's `remove_duplicate`): then
   * under every name it has, a shared module's parameters under each of the module's names.
   */
  *namedParameters(prefix = '', recurse = true, removeDuplicate = true): Generator<[string, Parameter]> {
    const seen = new Set<Parameter>();
    const mods: Iterable<[string, Module]> = !recurse
      ? [[prefix, this]]
      : removeDuplicate
        ? this.namedModules(prefix)
        : this.#everyPath(prefix);
    for (const [mp, m] of mods)
      for (const [k, v] of m.ownEntries())
        if (v instanceof Parameter && !(removeDuplicate && seen.has(v))) {
          seen.add(v);
          yield [mp ? `${mp}.${k}` : k, v];
        }
  }

  /** This module and its descendants under every path that reaches them (a cycle is walked once). */
  *#everyPath(prefix: string, above = new Set<Module>()): Generator<[string, Module]> {
    if (above.has(this)) return;
    above.add(this);
    yield [prefix, this];
    for (const [k, m] of this.namedChildren()) yield* m.#everyPath(prefix ? `${prefix}.${k}` : k, above);
    above.delete(this);
  }

  parameters(recurse = true): Parameter[] {
    return Array.from(this.namedParameters('', recurse), ([, p]) => p);
  }

  /**
   * The number of parameter elements, a parameter shared by two modules counted once (PyTorch's
   * `sum(p.numel() for p in model.parameters())`); `trainableOnly` counts those that require grad.
   */
  numParameters(options: { trainableOnly?: boolean } = {}): number {
    const op = `${this.constructor.name}.numParameters`;
    const trainableOnly = checkBool(op, 'trainableOnly', checkOptions(op, options, ['trainableOnly']).trainableOnly ?? false);
    let n = 0;
    for (const p of this.parameters()) if (!trainableOnly || p.requiresGrad) n += p.numel();
    return n;
  }

  *namedBuffers(prefix = ''): Generator<[string, Tensor]> {
    for (const [mp, m] of this.namedModules(prefix)) for (const [k, b] of m._buffers) if (b) yield [mp ? `${mp}.${k}` : k, b];
  }

  buffers(): Tensor[] {
    return Array.from(this.namedBuffers(), ([, b]) => b);
  }

  /** Calls `fn` on every sub-module (children first) and then on this one. */
  apply(fn: (m: Module) => void): this {
    for (const c of this.children()) c.apply(fn);
    fn(this);
    return this;
  }

  train(mode = true): this {
    for (const m of this.modules()) m.training = mode;
    return this;
  }

  eval(): this {
    return this.train(false);
  }

  /** Clears (setToNone, the default) or zeroes the gradients of all parameters. */
  zeroGrad(setToNone = true): void {
    zeroGrads(this.parameters(), setToNone);
  }

  /** Turns gradient tracking of every parameter on or off (freezing a model). */
  requiresGrad_(flag = true): this {
    for (const p of this.parameters()) p.requiresGrad_(flag);
    return this;
  }

  /**
   * Moves parameters and buffers to a device or casts floating ones to a dtype. Parameters are
   * replaced by new Parameter objects: build optimizers after moving the model.
   */
  to(target: string): this {
    noGrad(() => {
      for (const m of this.modules()) {
        for (const [, v] of m.ownEntries()) {
          if (!(v instanceof Parameter)) continue;
          // In place, as PyTorch's: Parameter objects keep their identity, so an optimizer built
          // before the move still updates the module's weights.
          moveInPlace(v, target);
          if (v.grad) moveInPlace(v.grad, target);
        }
        for (const [k, b] of m._buffers) {
          if (!b) continue;
          // A dtype cast applies to floating buffers only (counters stay integers), as in PyTorch.
          const moved = isDType(target) && !isFloating(b.dtype) ? b : b.to(target);
          if (moved !== b) m._buffers.set(k, keep(moved));
        }
      }
    });
    return this;
  }

  /**
   * Parameters then buffers by dotted name, sharing storage with the module (as PyTorch). A tied
   * parameter (one Parameter in two modules: nanoGPT's `transformer.wte.weight` and
   * `lm_head.weight`) is listed under each of its names, the same tensor, as PyTorch lists it.
   */
  stateDict(): Record<string, Tensor> {
    const out: Record<string, Tensor> = {};
    for (const [k, p] of this.namedParameters('', true, false)) out[k] = p;
    for (const [mp, m] of this.#everyPath('')) for (const [k, b] of m._buffers) if (b) out[mp ? `${mp}.${k}` : k] = b;
    return out;
  }

  /**
   * Copies values from `state` (an object or Map of tensors) into this module's parameters and
   * buffers. With `strict` (the default) missing and unexpected keys are errors — a tied parameter
   * needs only one of its names (safetensors' `save_model` keeps one), and names of one tied tensor
   * that are all given must hold the same values; a shape mismatch
   * or a floating/integer mismatch is always an error. Everything is checked (with
   * {@link checkStateDict}) before anything is written, so a load that fails leaves the module
   * exactly as it was.
   */
  loadStateDict(
    state: Record<string, Tensor> | Map<string, Tensor>,
    options: { strict?: boolean } = {},
  ): { missingKeys: string[]; unexpectedKeys: string[] } {
    const op = `${this.constructor.name}.loadStateDict`;
    const strict = checkBool(op, 'strict', checkOptions(op, options, ['strict']).strict ?? true);
    if (state === null || typeof state !== 'object' || Array.isArray(state) || state instanceof Tensor)
      throw argError(op, `state must be an object or a Map of tensors by name, got ${describe(state)}`);
    const src = state instanceof Map ? state : new Map(Object.entries(state));
    // 1. Check every entry.
    const { pairs, missingKeys, unexpectedKeys } = checkStateDict(this.stateDict(), src, strict, (code, detail) =>
      flockError(code, op, detail),
    );
    // 2. Convert (the only step that allocates), then write everything.
    noGrad(() =>
      tidy(() => {
        const ready = pairs.map(
          ([dst, v]) => [dst, v.dtype === dst.dtype && v.device === dst.device ? v : v.to(dst.dtype).to(dst.device)] as const,
        );
        for (const [dst, v] of ready) copy_(dst, v);
      }),
    );
    return { missingKeys, unexpectedKeys };
  }

  /**
   * The module tree as PyTorch prints a model: `Sequential(\n  (0): Linear(in_features=4, ...)\n)`,
   * each layer's settings from its {@link extraRepr}, in PyTorch's words so a printout can be
   * compared with PyTorch's. console.log and util.inspect print this too, not the fields.
   */
  toString(): string {
    const kids = [...this.namedChildren()];
    const head = `${this.constructor.name}(${this.extraRepr()}`;
    if (!kids.length) return `${head})`;
    const body = kids.map(([k, m]) => `  (${k}): ${m.toString().replace(/\n/g, '\n  ')}`).join('\n');
    return `${head}\n${body}\n)`;
  }

  [inspect.custom](): string {
    return this.toString();
  }

  /** Layer settings shown by toString(), as PyTorch's `extra_repr` writes them (see {@link pyRepr}). */
  extraRepr(): string {
    return '';
  }
}

/**
 * `v` as Python writes it in a module's repr: True/False, None, 'text', (3, 3) for a pair, (4,)
 * for one size; with `float`, a number as a Python float (1.0, 1e-05).
 */
export function pyRepr(v: unknown, float = false): string {
  if (typeof v === 'boolean') return v ? 'True' : 'False';
  if (v === null || v === undefined) return 'None';
  if (typeof v === 'string') return `'${v}'`;
  if (Array.isArray(v)) return v.length === 1 ? `(${pyRepr(v[0], float)},)` : `(${v.map((x) => pyRepr(x, float)).join(', ')})`;
  if (typeof v !== 'number' || !float || !Number.isFinite(v)) return String(v);
  if (Number.isInteger(v) && Math.abs(v) < 1e16) return `${v}.0`;
  if (v !== 0 && (Math.abs(v) < 1e-4 || Math.abs(v) >= 1e16)) return v.toExponential().replace(/e([+-])(\d)$/, 'e$10$2');
  return String(v);
}
