/**
 * fl.nn.lora: low-rank adapters (LoRA) on a model's linear layers, with PEFT's semantics and file
 * layout, so adapters trained here load in PEFT and the other way round.
 *
 * `apply` replaces each targeted layer by a {@link LoraLinear} that keeps the layer as `base_layer`
 * and adds `lora_A` (r × in, kaiming-uniform a=√5) and `lora_B` (out × r, zeros): the output is
 * `base(x) + (alpha / r) · B(A(dropout(x)))`, and the fresh adapter leaves the model unchanged.
 * Every other parameter of the model is frozen, so an optimizer over `model.parameters()` keeps
 * state for the adapters only (parameters without a gradient get none).
 */
import { readFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Tensor } from '../tensor';
import { tidy } from '../memory';
import { noGrad } from '../dispatch/grad_mode';
import { add_, sub_, copy_ } from '../ops/inplace';
import { argError, checkOptions, describe, flockError } from '../errors';
import { checkBool, checkInt, checkNumber, checkPath } from '../validate';
import { writeFileAtomic } from '../io/atomic';
import { load as loadSafetensors, save as saveSafetensors } from '../io/safetensors';
import { Module } from './module';
import { Parameter } from './parameter';
import { Linear } from './linear';
import { Dropout } from './dropout';
import { Identity } from './activation';
import { kaimingUniform_, zeros_ } from './init';

/** What `apply` takes; the names follow PEFT's LoraConfig in camelCase. */
export interface LoraOptions {
  /** The adapters' rank (PEFT's `r`, default 8). */
  r?: number;
  /** The scale numerator: adapters are scaled by alpha / r (PEFT's `lora_alpha`, default 8). */
  alpha?: number;
  /** Dropout on the adapters' input (PEFT's `lora_dropout`, default 0). */
  dropout?: number;
  /**
   * Which layers get adapters, as PEFT's `target_modules`: a list of names, each matching a module
   * path equal to it or ending in `.name` (['q_proj', 'v_proj']), or one string, a regular
   * expression the whole path must match.
   */
  targets: string[] | string;
  /**
   * The targeted layers store their weight as [in, out] (GPT-2's Conv1D) rather than Linear's
   * [out, in] (PEFT's `fan_in_fan_out`, default false). Their forward is kept as it is; only the
   * adapter shapes and merge read this. As PEFT, which decides by the layer's type, a Linear is
   * always [out, in] and a layer class named Conv1D always [in, out], whatever the flag says; so a
   * GPT-2 adapter saved by PEFT (fan_in_fan_out true) loads into a model built from Linear layers.
   */
  fanInFanOut?: boolean;
}

/** The settings an adapted model carries, as saved in adapter_config.json. */
export interface LoraConfig {
  r: number;
  alpha: number;
  dropout: number;
  targets: string[] | string;
  fanInFanOut: boolean;
}

const PREFIX = 'base_model.model.';
const CONFIG_FILE = 'adapter_config.json';
const WEIGHTS_FILE = 'adapter_model.safetensors';

type Forward = Module & { forward(x: Tensor): Tensor; weight?: unknown; bias?: unknown };

/** A layer with a low-rank adapter beside it: `base_layer(x) + scaling · lora_B(lora_A(lora_dropout(x)))`. */
export class LoraLinear extends Module {
  readonly inFeatures: number;
  readonly outFeatures: number;
  readonly scaling: number;
  /** Whether the adapter is folded into the base weight (forward then runs the base alone). */
  merged = false;
  // PEFT's field names: they are the state-dict names its files use.
  base_layer: Forward;
  lora_dropout: Dropout | Identity;
  lora_A: Linear;
  lora_B: Linear;

  constructor(
    base: Module,
    readonly r: number,
    readonly alpha: number,
    dropout: number,
    readonly fanInFanOut: boolean,
  ) {
    super();
    const op = 'LoraLinear';
    checkInt(op, 'r', r, 1);
    checkNumber(op, 'alpha', alpha);
    checkNumber(op, 'dropout', dropout, { min: 0, max: 1 });
    const w = (base as Forward).weight;
    if (!(w instanceof Parameter) || w.shape.length !== 2 || typeof (base as Forward).forward !== 'function')
      throw argError(op, `the target must be a layer with a 2-D weight parameter (a Linear), got ${base.constructor.name}`);
    if (base instanceof Linear) this.fanInFanOut = false;
    else if (base.constructor.name === 'Conv1D') this.fanInFanOut = true;
    [this.outFeatures, this.inFeatures] = this.fanInFanOut ? [w.shape[1], w.shape[0]] : [w.shape[0], w.shape[1]];
    this.base_layer = base as Forward;
    this.scaling = alpha / r;
    this.lora_dropout = dropout > 0 ? new Dropout(dropout) : new Identity();
    const t = { bias: false, dtype: w.dtype, device: w.device };
    this.lora_A = new Linear(this.inFeatures, r, t);
    this.lora_B = new Linear(r, this.outFeatures, t);
    kaimingUniform_(this.lora_A.weight, { a: Math.sqrt(5) });
    zeros_(this.lora_B.weight);
  }

  /** The base weight this adapter folds into. */
  get baseWeight(): Parameter {
    return this.base_layer.weight as Parameter;
  }

  forward(x: Tensor): Tensor {
    const y = this.base_layer.forward(x);
    if (this.merged) return y;
    // Scaled between A and B: the same product, and the multiply runs over [rows, r] rather than
    // over the layer's whole [rows, out] output.
    const a = this.lora_A.forward(this.lora_dropout.forward(x));
    return y.add(this.lora_B.forward(this.scaling === 1 ? a : a.mul(this.scaling)));
  }

  /** scaling · B·A in the base weight's layout ([in, out] under fanInFanOut) and dtype. */
  deltaWeight(): Tensor {
    return noGrad(() =>
      tidy(() => {
        const d = this.lora_B.weight.matmul(this.lora_A.weight).mul(this.scaling);
        return (this.fanInFanOut ? d.transpose(0, 1) : d).to(this.baseWeight.dtype).contiguous();
      }),
    );
  }

  /** Folds the adapter into the base weight (no-op when merged). */
  merge(): void {
    if (this.merged) return;
    this.#fold(add_);
    this.merged = true;
  }

  /** Takes the adapter back out of the base weight (no-op when not merged); exact up to rounding. */
  unmerge(): void {
    if (!this.merged) return;
    this.#fold(sub_);
    this.merged = false;
  }

  #fold(op: (self: Tensor, other: Tensor) => Tensor): void {
    const d = this.deltaWeight();
    noGrad(() => op(this.baseWeight, d));
    d.dispose();
  }

  override extraRepr(): string {
    return `r=${this.r}, alpha=${this.alpha}, scaling=${this.scaling}, fan_in_fan_out=${this.fanInFanOut}, merged=${this.merged}`;
  }
}

/** The LoRA settings of models `apply` adapted. */
const configs = new WeakMap<Module, LoraConfig>();

function matches(targets: string[] | string, path: string): boolean {
  if (typeof targets === 'string') return new RegExp(`^(?:${targets})$`).test(path);
  return targets.some((t) => path === t || path.endsWith(`.${t}`));
}

function checkConfig(op: string, options: LoraOptions): LoraConfig {
  const o = checkOptions(op, options, ['r', 'alpha', 'dropout', 'targets', 'fanInFanOut']);
  const r = checkInt(op, 'r', o.r ?? 8, 1);
  const alpha = checkNumber(op, 'alpha', o.alpha ?? 8);
  const dropout = checkNumber(op, 'dropout', o.dropout ?? 0, { min: 0, max: 1 });
  const fanInFanOut = checkBool(op, 'fanInFanOut', o.fanInFanOut ?? false);
  const t = o.targets;
  const okList = Array.isArray(t) && t.length > 0 && t.every((s) => typeof s === 'string' && s !== '');
  if (!okList && !(typeof t === 'string' && t !== ''))
    throw argError(op, `targets must be a non-empty list of module names or a regular expression string, got ${describe(t)}`);
  if (typeof t === 'string') {
    try {
      new RegExp(t);
    } catch (e) {
      throw argError(op, `targets is not a valid regular expression: ${(e as Error).message}`);
    }
  }
  return { r, alpha, dropout, targets: Array.isArray(t) ? [...t] : t, fanInFanOut };
}

/** ERR_ARG unless `model` is a Module (every function here takes one). */
function checkModel(op: string, model: unknown): asserts model is Module {
  if (!(model instanceof Module)) throw argError(op, `model must be a Module, got ${describe(model)}`);
}

/** Every LoraLinear of `model` with its module path. */
export function adapters(model: Module): Generator<[string, LoraLinear]> {
  checkModel('lora.adapters', model);
  return (function* () {
    for (const [path, m] of model.namedModules()) if (m instanceof LoraLinear) yield [path, m] as [string, LoraLinear];
  })();
}

/**
 * Adds LoRA adapters to the layers of `model` that `options.targets` names (PEFT's
 * get_peft_model), freezing every other parameter. Returns the model, changed in place.
 * ERR_ARG when nothing matches, a target is not a linear layer, or the model already has adapters.
 */
export function apply<M extends Module>(model: M, options: LoraOptions): M {
  const op = 'lora.apply';
  checkModel(op, model);
  const cfg = checkConfig(op, options);
  if (adapters(model).next().done === false) throw argError(op, 'the model already has LoRA adapters; call lora.unload first');
  const hits: [Module, string, Module][] = [];
  for (const [path, m] of model.namedModules()) {
    if (path === '' || !matches(cfg.targets, path)) continue;
    hits.push([parentOf(model, path), path.slice(path.lastIndexOf('.') + 1), m]);
  }
  if (hits.length === 0) {
    const linears = [...model.namedModules()].filter(([, m]) => m instanceof Linear).map(([p]) => p);
    throw argError(op, `no module matches targets ${JSON.stringify(cfg.targets)}; linear layers: ${linears.join(', ') || 'none'}`);
  }
  // Every wrapper is built (and its target checked) before the model changes at all.
  const wrapped = hits.map(([, , m]) => new LoraLinear(m, cfg.r, cfg.alpha, cfg.dropout, cfg.fanInFanOut));
  model.requiresGrad_(false);
  hits.forEach(([parent, name, m], i) => {
    wrapped[i].train(m.training); // the adapter's dropout follows the layer's mode
    setChild(parent, name, wrapped[i]);
  });
  configs.set(model, cfg);
  return model;
}

/** The module holding the sub-module at `path` of `model`. */
function parentOf(model: Module, path: string): Module {
  let m = model;
  for (const k of path.split('.').slice(0, -1)) m = (m as unknown as Record<string, Module>)[k];
  return m;
}

/** Replaces the child `name` of `parent`. */
function setChild(parent: Module, name: string, child: Module): void {
  // Every container keeps its children as fields ('0', '1', … for lists), as PyTorch's _modules.
  const p = parent as unknown as Record<string, unknown>;
  if (!(p[name] instanceof Module)) throw argError('lora.apply', `cannot replace child '${name}' of ${parent.constructor.name}`);
  p[name] = child;
}

/** The adapters' parameters (what an optimizer should train). */
export function parameters(model: Module): Parameter[] {
  checkModel('lora.parameters', model);
  const out: Parameter[] = [];
  for (const [, a] of adapters(model)) out.push(a.lora_A.weight, a.lora_B.weight);
  return out;
}

/** The LoRA settings `apply` or `load` gave `model`, or null when it has no adapters. */
export function config(model: Module): LoraConfig | null {
  checkModel('lora.config', model);
  if (adapters(model).next().done) return null;
  for (const m of model.modules()) {
    const c = configs.get(m);
    if (c) return c;
  }
  return null;
}

/** Folds every adapter into its base weight; forward then costs what the base model does. */
export function merge(model: Module): void {
  checkModel('lora.merge', model);
  for (const [, a] of adapters(model)) a.merge();
}

/** Takes the adapters back out of the base weights after {@link merge}. */
export function unmerge(model: Module): void {
  checkModel('lora.unmerge', model);
  for (const [, a] of adapters(model)) a.unmerge();
}

/**
 * Merges the adapters and puts the base layers back in place (PEFT's merge_and_unload): the model
 * then has its original structure and state-dict names, with the adapters folded in. `merge: false`
 * drops the adapters instead. Parameters stay frozen; call `model.requiresGrad_()` to train them.
 */
export function unload<M extends Module>(model: M, options: { merge?: boolean } = {}): M {
  checkModel('lora.unload', model);
  const o = checkOptions('lora.unload', options, ['merge']);
  const fold = checkBool('lora.unload', 'merge', o.merge ?? true);
  const found = [...adapters(model)];
  for (const [path, a] of found) {
    if (fold) a.merge();
    else a.unmerge();
    setChild(parentOf(model, path), path.slice(path.lastIndexOf('.') + 1), a.base_layer);
  }
  for (const m of model.modules()) configs.delete(m);
  return model;
}

/** The adapters' tensors under PEFT's names (`base_model.model.<path>.lora_A.weight`). */
export function stateDict(model: Module): Record<string, Tensor> {
  checkModel('lora.stateDict', model);
  const out: Record<string, Tensor> = {};
  for (const [path, a] of adapters(model)) {
    out[`${PREFIX}${path}.lora_A.weight`] = a.lora_A.weight;
    out[`${PREFIX}${path}.lora_B.weight`] = a.lora_B.weight;
  }
  return out;
}

/** Options for {@link save}: fields of adapter_config.json PEFT reads but flockml does not use. */
export interface LoraSaveOptions {
  /** PEFT's task_type (default 'CAUSAL_LM'). */
  taskType?: string;
  /** PEFT's base_model_name_or_path (default null). */
  baseModelNameOrPath?: string | null;
}

/**
 * Writes the adapters alone to `dir` in PEFT's layout: adapter_model.safetensors and
 * adapter_config.json (peft_type LORA, bias none). ERR_ARG when the model has no adapters.
 */
export async function save(model: Module, dir: string, options: LoraSaveOptions = {}): Promise<void> {
  const op = 'lora.save';
  checkModel(op, model);
  const o = checkOptions(op, options, ['taskType', 'baseModelNameOrPath']);
  checkPath(op, 'dir', dir);
  const cfg = config(model);
  if (!cfg) throw argError(op, 'the model has no LoRA adapters (call lora.apply or lora.load first)');
  if ([...adapters(model)].some(([, a]) => a.merged))
    throw flockError('ERR_STATE_DICT', op, 'the adapters are merged into the base weights; call lora.unmerge before saving');
  const peft = {
    alpha_pattern: {},
    auto_mapping: null,
    base_model_name_or_path: o.baseModelNameOrPath ?? null,
    bias: 'none',
    fan_in_fan_out: cfg.fanInFanOut,
    inference_mode: true,
    init_lora_weights: true,
    layers_pattern: null,
    layers_to_transform: null,
    lora_alpha: cfg.alpha,
    lora_dropout: cfg.dropout,
    modules_to_save: null,
    peft_type: 'LORA',
    r: cfg.r,
    rank_pattern: {},
    revision: null,
    target_modules: cfg.targets,
    task_type: o.taskType ?? 'CAUSAL_LM',
    use_dora: false,
    use_rslora: false,
  };
  await mkdir(dir, { recursive: true });
  await saveSafetensors(stateDict(model), join(dir, WEIGHTS_FILE), { metadata: { format: 'pt' } });
  await writeFileAtomic(op, join(dir, CONFIG_FILE), `${JSON.stringify(peft, null, 2)}\n`);
}

/** Reads a PEFT adapter_config.json into flockml's LoRA options; ERR_FORMAT on what LoRA here cannot honour. */
export function fromPeftConfig(json: Record<string, unknown>, where = CONFIG_FILE): LoraOptions {
  const op = 'lora.load';
  if (json === null || typeof json !== 'object' || Array.isArray(json))
    throw argError(op, `the adapter config must be an object (adapter_config.json's contents), got ${describe(json)}`);
  if (typeof where !== 'string') throw argError(op, `where must be a string (the config's file name), got ${describe(where)}`);
  const bad = (detail: string) => flockError('ERR_FORMAT', op, `${where}: ${detail}`);
  if (json.peft_type !== undefined && json.peft_type !== 'LORA') throw bad(`peft_type is ${describe(json.peft_type)}, expected "LORA"`);
  if (json.bias !== undefined && json.bias !== 'none') throw bad(`bias ${describe(json.bias)} is not supported (only "none")`);
  for (const k of ['use_rslora', 'use_dora']) if (json[k] === true) throw bad(`${k} is not supported`);
  for (const k of ['rank_pattern', 'alpha_pattern'])
    if (json[k] && typeof json[k] === 'object' && Object.keys(json[k] as object).length) throw bad(`${k} is not supported`);
  const tm = json.target_modules;
  if (!(typeof tm === 'string' || (Array.isArray(tm) && tm.every((s) => typeof s === 'string'))))
    throw bad(`target_modules must be a list of names or a string, got ${describe(tm)}`);
  const num = (k: string, dflt: number) => {
    const v = json[k] ?? dflt;
    if (typeof v !== 'number' || !Number.isFinite(v)) throw bad(`${k} must be a number, got ${describe(v)}`);
    return v;
  };
  return {
    r: num('r', 8),
    alpha: num('lora_alpha', 8),
    dropout: num('lora_dropout', 0),
    targets: tm as string[] | string,
    fanInFanOut: json.fan_in_fan_out === true,
  };
}

/**
 * Loads adapters saved by {@link save} or by PEFT from `dir` into `model`: applies LoRA with the
 * saved config when the model has none, then copies the adapter weights (names with or without
 * PEFT's adapter name, `lora_A.default.weight`). ERR_STATE_DICT when a tensor is missing,
 * unexpected or of the wrong shape; ERR_FORMAT on a config this module cannot honour.
 */
export async function load<M extends Module>(model: M, dir: string): Promise<M> {
  const op = 'lora.load';
  checkPath(op, 'dir', dir);
  let json: Record<string, unknown>;
  const cfgPath = join(dir, CONFIG_FILE);
  try {
    json = JSON.parse(await readFile(cfgPath, 'utf8'));
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code === 'ENOENT' ? 'ERR_NOT_FOUND' : 'ERR_FORMAT';
    throw flockError(code, op, `cannot read ${cfgPath}: ${(e as Error).message}`);
  }
  const opts = fromPeftConfig(json, cfgPath);
  const have = config(model);
  if (!have) apply(model, opts);
  else if (have.r !== opts.r) throw flockError('ERR_STATE_DICT', op, `the model's adapters have r=${have.r}, the saved ones r=${opts.r}`);
  const tensors = await loadSafetensors(join(dir, WEIGHTS_FILE));
  try {
    const own = stateDict(model);
    const seen = new Set<string>();
    const pairs: [Tensor, Tensor][] = [];
    for (const [raw, t] of Object.entries(tensors)) {
      const name = raw.replace(/\.(lora_[AB])\.default\.weight$/, '.$1.weight');
      const dst = own[name];
      if (!dst) throw flockError('ERR_STATE_DICT', op, `unexpected tensor '${raw}' (the model has no such adapter)`);
      if (dst.shape.join() !== t.shape.join())
        throw flockError('ERR_STATE_DICT', op, `'${raw}' has shape [${t.shape}], the model's adapter [${dst.shape}]`);
      seen.add(name);
      pairs.push([dst, t]);
    }
    const missing = Object.keys(own).filter((k) => !seen.has(k));
    if (missing.length) throw flockError('ERR_STATE_DICT', op, `missing adapter tensors: ${missing.join(', ')}`);
    unmerge(model);
    noGrad(() =>
      tidy(() => {
        for (const [dst, src] of pairs) copy_(dst, src.to(dst.dtype).to(dst.device));
      }),
    );
    return model;
  } finally {
    for (const t of Object.values(tensors)) t.dispose();
  }
}
