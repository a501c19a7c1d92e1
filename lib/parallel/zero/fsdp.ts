/**
 * FullyShardedDataParallel (ZeRO stage 3, as PyTorch FSDP): the model is a chain of units (the
 * children of an nn.Module, or an explicit list), each unit's parameters laid flat and split into
 * equal blocks, one per rank ({@link FlatSpace}). Between steps a rank holds only its blocks —
 * parameters, gradients and (with a plain optimizer on {@link parameters}) optimizer state are all
 * 1/N. A unit's parameters are all-gathered just before its forward and again before its backward,
 * and freed right after each; the next unit's gather is issued while the current one computes
 * (prefetch, one unit ahead in forward and one unit behind in backward).
 *
 * The all-gathers are ordered collectives (`{ ordered: true }`): the ops queued after one wait for
 * it inside the device's stream, so forward is synchronous and backward runs in the ordinary
 * autograd engine. A node recorded on each unit's output gathers the unit's parameters again when
 * its gradient arrives (before the unit's own backward nodes run) and issues the previous unit's
 * gather; the parameters' gradient hooks tell when the unit's backward is complete, and then its
 * gradients are reduce-scattered (averaged; an unordered collective) and the gathered parameters
 * freed. {@link syncGradients} awaits those reduce-scatters and adds each block's gradient into the
 * block's `.grad`, as DDP's syncGradients does:
 *
 *   const fsdp = await fl.parallel.FullyShardedDataParallel.create(model);   // model.children() are the units
 *   const opt = new fl.optim.Adam(fsdp.parameters(), { lr });                  // this rank's blocks
 *   lossFn(fsdp.forward(x), y).backward();
 *   await fsdp.syncGradients();
 *   opt.step(); opt.zeroGrad();
 *
 * Outside forward and backward the units' own parameter tensors are empty (shape [0]), as FSDP's
 * resharded parameters; `fsdp.gatherAll()` fills them for evaluation or saving.
 */
import { Tensor } from '../../tensor';
import { keep, tidy } from '../../memory';
import { isGradEnabled, noGrad } from '../../autograd/grad_mode';
import { record } from '../../autograd/node';
import { zeros } from '../../ops/creation';
import { argError, checkOptions, describe, flockError } from '../../errors';
import { checkBool, checkNumber } from '../../validate';
import { gradNorm } from '../../optim/clip';
import { copy_ } from '../../ops/elementwise';
import { type ProcessGroup, getRank, getWorldSize, isInitialized } from '../../distributed/process_group';
import * as dist from '../../distributed/process_group';
import type { Work } from '../../distributed/work';
import { type FlatSpace, flatten, shardValues, spacesByDtype } from './layout';
import { Optimizer } from '../../optim/optimizer';
import { loadZeroSharded, saveZeroSharded, type ShardOwner } from './state';

/** A unit: its parameters and its forward from the previous unit's output to its own. */
export interface ShardedUnit {
  parameters(): Tensor[];
  forward(x: Tensor): Tensor;
}

export interface FSDPOptions {
  /** Group to shard over (default: the world). */
  group?: ProcessGroup;
  /** Start the next unit's all-gather while the current unit computes (default true). */
  prefetch?: boolean;
}

interface UnitState {
  unit: ShardedUnit;
  spaces: FlatSpace[];
  shapes: number[][][];
  /** This rank's block of each space: the leaves the optimizer steps. */
  shards: Tensor[];
  /** The ordered gathers issued (flat, padded), not yet adopted by the parameters, or null. */
  gathering: Tensor[] | null;
  materialized: boolean;
  empty: Map<string, Tensor>;
  /** In backward: the parameters whose gradient has not arrived yet; null outside the unit's backward. */
  pending: Set<Tensor> | null;
}

interface Scatter {
  work: Work;
  input: Tensor;
  out: Tensor;
  shard: Tensor;
}

export class FullyShardedDataParallel {
  readonly #units: UnitState[];
  readonly #group: ProcessGroup | undefined;
  readonly #prefetch: boolean;
  readonly rank: number;
  readonly worldSize: number;
  /** Parameters left holding an empty `.grad` by the hook that completed their unit; cleared by syncGradients. */
  #emptied: Tensor[] = [];
  /** Reduce-scatters issued since the last syncGradients(). */
  #scatters: Scatter[] = [];
  #removeHooks: (() => void)[] = [];

  private constructor(units: ShardedUnit[], o: FSDPOptions) {
    this.#group = o.group;
    this.#prefetch = o.prefetch ?? true;
    this.rank = o.group ? o.group.rank : getRank();
    this.worldSize = o.group ? o.group.size : getWorldSize();
    this.#units = units.map((unit) => ({
      unit,
      spaces: [],
      shapes: [],
      shards: [],
      gathering: null,
      materialized: true,
      empty: new Map(),
      pending: null,
    }));
  }

  /**
   * Shards `model` (an nn.Module whose children run in order, or a list of units): every rank
   * takes rank 0's parameter values, keeps its blocks and frees the rest.
   */
  static async create(
    model: ShardedUnit[] | { children(): Iterable<unknown> },
    options: FSDPOptions = {},
  ): Promise<FullyShardedDataParallel> {
    const op = 'FullyShardedDataParallel';
    const o = checkOptions(op, options, ['group', 'prefetch']);
    if (o.group !== undefined && (o.group === null || typeof o.group !== 'object' || typeof o.group.allGather !== 'function'))
      throw argError(op, `group must be a ProcessGroup, got ${describe(o.group)}`);
    checkBool(op, 'prefetch', o.prefetch ?? true);
    if (!o.group && !isInitialized()) throw flockError('ERR_ARG', op, 'call fl.distributed.initProcessGroup() first');
    const units = Array.isArray(model)
      ? model
      : model && typeof (model as { children?: unknown }).children === 'function'
        ? [...(model as { children(): Iterable<unknown> }).children()]
        : null;
    if (!units || units.length === 0)
      throw argError(op, `expected an nn.Module with children or a non-empty list of units, got ${describe(model)}`);
    units.forEach((u, i) => {
      const v = u as Partial<ShardedUnit> | null;
      if (!v || typeof v.parameters !== 'function' || typeof v.forward !== 'function')
        throw argError(op, `unit ${i} must have parameters() and forward(x), got ${describe(u)}`);
    });
    const f = new FullyShardedDataParallel(units as ShardedUnit[], o);
    const seen = new Set<Tensor>();
    for (const [i, s] of f.#units.entries()) {
      const ps = s.unit.parameters().filter((p) => p.requiresGrad);
      for (const p of ps) {
        if (seen.has(p)) throw argError(op, `a parameter [${p.shape.join(',')}] of unit ${i} also belongs to an earlier unit`);
        seen.add(p);
      }
      s.spaces = spacesByDtype(op, ps, f.worldSize);
      s.shapes = s.spaces.map((sp) => sp.params.map((p) => [...p.shape]));
    }
    await Promise.all([...seen].map((p) => f.#broadcast(p).wait()));
    for (const s of f.#units) {
      s.shards = s.spaces.map((sp) => shardValues(sp, f.rank).requiresGrad_());
      f.#free(s);
      for (const sp of s.spaces) for (const p of sp.params) f.#removeHooks.push(p.registerHook((g) => f.#onGrad(s, p, g)));
    }
    return f;
  }

  /** Units whose all-gather has been issued and not yet adopted by their parameters (the prefetched ones). */
  get gathersInFlight(): number {
    return this.#units.filter((s) => s.gathering !== null).length;
  }

  /** This rank's parameter blocks (flat, 1/N of each unit): what the optimizer steps. */
  parameters(): Tensor[] {
    return this.#units.flatMap((s) => s.shards);
  }

  /**
   * Runs the units in order on `x`, each with its parameters gathered just for its forward. When
   * grad mode is on, each unit's output carries the node that gathers the unit again for backward.
   */
  forward(x: Tensor): Tensor {
    const op = 'FullyShardedDataParallel.forward';
    if (!(x instanceof Tensor)) throw argError(op, `expected a Tensor, got ${describe(x)}`);
    if (this.#scatters.length || this.#units.some((s) => s.pending))
      throw flockError('ERR_AUTOGRAD', op, "the last backward's gradients are not synchronized: await fsdp.syncGradients() first");
    // Gathers from before (a prefetch no backward used, gatherAll()) may hold values the optimizer has since changed.
    for (const s of this.#units) {
      this.#dropGather(s);
      if (s.materialized) this.#free(s);
    }
    let h = x;
    for (let k = 0; k < this.#units.length; k++) {
      const s = this.#units[k];
      this.#materialize(s);
      if (this.#prefetch && k + 1 < this.#units.length) this.#startGather(this.#units[k + 1]);
      const out = s.unit.forward(h);
      this.#free(s);
      if (!(out instanceof Tensor)) throw argError(op, `unit ${k} returned ${describe(out)}, expected a Tensor`);
      h = this.#beforeBackward(out, k);
    }
    // Backward starts with the last unit: its gather overlaps the loss computation.
    if (this.#prefetch && h.requiresGrad) this.#startGather(this.#units[this.#units.length - 1]);
    return h;
  }

  /**
   * Awaits the reduce-scatters of the last backward and adds each block's averaged gradient into
   * its `.grad` (units whose backward some parameters took no part in are reduce-scattered now,
   * those parameters counting zero). Call it after `loss.backward()` and before the optimizer's step.
   */
  async syncGradients(): Promise<void> {
    this.#clearEmptied();
    for (let k = this.#units.length - 1; k >= 0; k--) if (this.#units[k].pending) this.#reduceUnit(this.#units[k]);
    const scatters = this.#scatters;
    this.#scatters = [];
    try {
      await Promise.all(scatters.map((r) => r.work.wait()));
      noGrad(() => {
        for (const r of scatters) {
          if (r.shard.grad) {
            const sum = keep(tidy(() => r.shard.grad!.add(r.out)));
            r.shard.grad.dispose();
            r.out.dispose();
            r.shard.grad = sum;
          } else r.shard.grad = r.out;
        }
      });
    } catch (e) {
      for (const r of scatters) if (r.shard.grad !== r.out) r.out.dispose();
      throw e;
    } finally {
      for (const r of scatters) r.input.dispose();
    }
  }

  /** `out` passed on unchanged, with a node that gathers unit `k` when its gradient arrives. */
  #beforeBackward(out: Tensor, k: number): Tensor {
    if (!out.requiresGrad || !isGradEnabled()) return out;
    return record(
      out.detach(),
      'FSDPUnitBackward',
      [out],
      (g) => {
        // The engine has added the empty gradients of the units completed so far (another backward may follow).
        this.#clearEmptied();
        const s = this.#units[k];
        this.#materialize(s);
        s.pending = new Set(s.spaces.flatMap((sp) => sp.params));
        if (s.pending.size === 0) s.pending = null;
        if (this.#prefetch && k > 0) this.#startGather(this.#units[k - 1]);
        return [g];
      },
      { savesOutput: false },
    );
  }

  #clearEmptied(): void {
    for (const p of this.#emptied) {
      p.grad?.dispose();
      p.grad = null;
    }
    this.#emptied = [];
  }

  /**
   * A parameter's gradient `g` is final. When it is the last of its unit, the unit's backward is
   * complete: its gradients (`g` for this one, which the engine has not added yet) are
   * reduce-scattered, its parameters freed, and the hook hands the engine an empty gradient to add.
   */
  #onGrad(s: UnitState, p: Tensor, g: Tensor): Tensor | undefined {
    if (!s.pending?.delete(p) || s.pending.size > 0) return undefined;
    this.#reduceUnit(s, p, g);
    this.#emptied.push(p);
    return s.empty.get(p.dtype);
  }

  /** Reduce-scatters the unit's gradients into fresh blocks and frees its parameters and their gradients. */
  #reduceUnit(s: UnitState, last?: Tensor, g?: Tensor): void {
    s.pending = null;
    s.spaces.forEach((sp, i) => {
      const input = keep(tidy(() => flatten(sp, (p) => (p === last ? g!.to(sp.dtype as 'f32') : p.grad))));
      const out = keep(zeros([sp.per], { dtype: sp.dtype as 'f32', device: sp.device }));
      this.#scatters.push({ work: this.#reduceScatter(out, input), input, out, shard: s.shards[i] });
      for (const p of sp.params) {
        p.grad?.dispose();
        p.grad = null;
      }
    });
    this.#free(s);
  }

  /**
   * Clips the gradients of all ranks' blocks together to total `normType`-norm `maxNorm` (as
   * PyTorch FSDP's clip_grad_norm_: each rank's norm of its blocks, combined across ranks, then the
   * same coefficient min(1, maxNorm / (total + 1e-6)) everywhere). Resolves with the total norm
   * before clipping. A collective.
   */
  async clipGradNorm(maxNorm: number, normType = 2): Promise<number> {
    const op = 'FullyShardedDataParallel.clipGradNorm';
    checkNumber(op, 'maxNorm', maxNorm, { min: 0 });
    checkNumber(op, 'normType', normType, { above: 0, infinite: true });
    const grads = this.parameters().filter((t) => t.grad);
    const inf = normType === Infinity;
    const local = keep(
      noGrad(() =>
        tidy(() => {
          const n = grads.length ? gradNorm(grads, normType).to('f64') : zeros([], { dtype: 'f64' });
          return (inf ? n : n.pow(normType)).reshape([1]);
        }),
      ),
    );
    try {
      await (this.#group
        ? this.#group.allReduce(local, { op: inf ? 'max' : 'sum' })
        : dist.allReduce(local, { op: inf ? 'max' : 'sum' })
      ).wait();
      const v = Number((await local.data())[0]);
      const total = inf ? v : v ** (1 / normType);
      const coef = maxNorm / (total + 1e-6);
      if (coef < 1) noGrad(() => tidy(() => grads.forEach((t) => copy_(t.grad!, t.grad!.mul(coef)))));
      return total;
    } finally {
      local.dispose();
    }
  }

  /**
   * Saves this rank's parameter blocks, and `optimizer`'s state for them (a plain optimizer over
   * {@link parameters}), under `dir` with lib/io/sharded.ts. A collective.
   */
  saveSharded(dir: string, options: { optimizer?: Optimizer<{ lr: number }>; prefix?: string } = {}): Promise<void> {
    const o = checkOptions('FullyShardedDataParallel.saveSharded', options, ['optimizer', 'prefix']);
    return saveZeroSharded(this.#owner('FullyShardedDataParallel.saveSharded', o.optimizer), dir, o.prefix ?? 'fsdp');
  }

  /** Loads blocks saved by {@link saveSharded} at any world size (and the optimizer state, when given); the next forward gathers them. */
  loadSharded(dir: string, options: { optimizer?: Optimizer<{ lr: number }>; prefix?: string } = {}): Promise<void> {
    const o = checkOptions('FullyShardedDataParallel.loadSharded', options, ['optimizer', 'prefix']);
    return loadZeroSharded(this.#owner('FullyShardedDataParallel.loadSharded', o.optimizer), dir, o.prefix ?? 'fsdp');
  }

  #owner(op: string, optimizer: Optimizer<{ lr: number }> | undefined): ShardOwner {
    const shards = this.parameters();
    if (optimizer !== undefined) {
      if (!(optimizer instanceof Optimizer)) throw argError(op, `optimizer must be an fl.optim Optimizer, got ${describe(optimizer)}`);
      const has = new Set(optimizer.paramGroups.flatMap((g) => g.params));
      if (!shards.every((t) => has.has(t))) throw argError(op, "the optimizer must be built on this FSDP's parameters()");
    }
    return {
      spaces: this.#units.flatMap((s) => s.spaces),
      shards,
      optimizer: optimizer ?? null,
      rank: this.rank,
      worldSize: this.worldSize,
      afterLoad: async () => {
        for (const s of this.#units) {
          this.#dropGather(s);
          if (s.materialized) this.#free(s);
        }
      },
    };
  }

  /** Gathers every unit's parameters into the units' own tensors (for evaluation or saving) until the next forward. */
  gatherAll(): void {
    for (const s of this.#units) this.#startGather(s);
    for (const s of this.#units) this.#materialize(s);
  }

  /** Frees the shards and the gathered parameters and removes the gradient hooks; the units' tensors keep what they hold now. */
  dispose(): void {
    for (const r of this.#removeHooks) r();
    this.#removeHooks = [];
    for (const r of this.#scatters) {
      r.input.dispose();
      r.out.dispose();
    }
    this.#scatters = [];
    for (const s of this.#units) {
      this.#dropGather(s);
      s.pending = null;
      for (const t of s.shards) {
        t.grad?.dispose();
        t.dispose();
      }
      for (const t of s.empty.values()) t.dispose();
      s.empty.clear();
    }
  }

  /** Issues the ordered all-gather of `s`'s blocks: the ops queued after it see the full values. */
  #startGather(s: UnitState): void {
    if (s.gathering || s.materialized) return;
    s.gathering = s.spaces.map((sp, i) => {
      const full = keep(zeros([sp.per * sp.worldSize], { dtype: sp.dtype as 'f32', device: sp.device }));
      if (this.#group) this.#group.allGather(full, s.shards[i], { ordered: true });
      else dist.allGather(full, s.shards[i], { ordered: true });
      return full;
    });
  }

  #dropGather(s: UnitState): void {
    for (const f of s.gathering ?? []) f.dispose();
    s.gathering = null;
  }

  /** Points `s`'s parameters at its gathered values (issuing the gather if no prefetch did). */
  #materialize(s: UnitState): void {
    if (s.materialized) return;
    this.#startGather(s);
    const fulls = s.gathering!;
    try {
      noGrad(() =>
        tidy(() =>
          s.spaces.forEach((sp, i) =>
            sp.params.forEach((p, j) =>
              p._adopt(
                fulls[i]
                  .narrow(
                    0,
                    sp.offsets[j],
                    s.shapes[i][j].reduce((a, b) => a * b, 1),
                  )
                  .reshape(s.shapes[i][j]),
              ),
            ),
          ),
        ),
      );
      s.materialized = true;
    } finally {
      this.#dropGather(s);
    }
  }

  /** Releases the unit's gathered parameters: each tensor keeps its identity, holding nothing. */
  #free(s: UnitState): void {
    for (const sp of s.spaces)
      for (const p of sp.params) {
        let e = s.empty.get(p.dtype);
        if (!e) s.empty.set(p.dtype, (e = keep(zeros([0], { dtype: p.dtype as 'f32', device: p.device }))));
        p._adopt(e);
      }
    s.materialized = false;
  }

  #broadcast(p: Tensor): Work {
    return this.#group ? this.#group.broadcast(p, 0) : dist.broadcast(p, { src: 0 });
  }

  #reduceScatter(out: Tensor, input: Tensor): Work {
    return this.#group ? this.#group.reduceScatter(out, input, { op: 'avg' }) : dist.reduceScatter(out, input, { op: 'avg' });
  }
}
