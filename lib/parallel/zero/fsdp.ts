/**
 * FullyShardedDataParallel (ZeRO stage 3, as PyTorch FSDP): the model is a chain of units (the
 * children of an nn.Module, or an explicit list), each unit's parameters laid flat and split into
 * equal blocks, one per rank ({@link FlatSpace}). Between steps a rank holds only its blocks —
 * parameters, gradients and (with a plain optimizer on {@link parameters}) optimizer state are all
 * 1/N. A unit's parameters are all-gathered just before its forward and again before its backward,
 * and freed right after each; the next unit's gather is started while the current one computes
 * (prefetch). After a unit's backward its gradients are reduce-scattered (averaged) into the
 * blocks' `.grad`, overlapping the backward of the units before it.
 *
 * Collectives complete asynchronously and flockml never blocks the event loop on them, so forward
 * and backward are awaited here, unit by unit:
 *
 *   const fsdp = await fl.parallel.FullyShardedDataParallel.create(model);   // model.children() are the units
 *   const opt = new fl.optim.Adam(fsdp.parameters(), { lr });                  // this rank's blocks
 *   const out = await fsdp.forward(x);
 *   await fsdp.backward(lossFn(out, y));
 *   opt.step(); opt.zeroGrad();
 *
 * Outside forward and backward the units' own parameter tensors are empty (shape [0]), as FSDP's
 * resharded parameters; `await fsdp.gatherAll()` fills them for evaluation or saving.
 */
import { Tensor } from '../../tensor';
import { keep, tidy } from '../../memory';
import { noGrad } from '../../autograd/grad_mode';
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
  /** The gathers in flight (flat, padded) or null. */
  gathering: { fulls: Tensor[]; done: Promise<void> } | null;
  materialized: boolean;
  empty: Map<string, Tensor>;
}

export class FullyShardedDataParallel {
  readonly #units: UnitState[];
  readonly #group: ProcessGroup | undefined;
  readonly #prefetch: boolean;
  readonly rank: number;
  readonly worldSize: number;
  /** Forward boundaries: each unit's input (a leaf for every unit but the first) and output. */
  #trail: Array<{ input: Tensor; output: Tensor }> = [];

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
    }
    return f;
  }

  /** Units whose all-gather has been started and not yet awaited (the prefetched ones). */
  get gathersInFlight(): number {
    return this.#units.filter((s) => s.gathering !== null).length;
  }

  /** This rank's parameter blocks (flat, 1/N of each unit): what the optimizer steps. */
  parameters(): Tensor[] {
    return this.#units.flatMap((s) => s.shards);
  }

  /** Runs the units in order on `x`, each with its parameters gathered just for its forward. */
  async forward(x: Tensor): Promise<Tensor> {
    if (!(x instanceof Tensor)) throw argError('FullyShardedDataParallel.forward', `expected a Tensor, got ${describe(x)}`);
    this.#clearTrail();
    let h = x;
    for (let k = 0; k < this.#units.length; k++) {
      const s = this.#units[k];
      await this.#materialize(s);
      if (this.#prefetch && k + 1 < this.#units.length) this.#startGather(this.#units[k + 1]);
      const input = k === 0 ? h : keep(h.detach().requiresGrad_(h.requiresGrad));
      const output = keep(s.unit.forward(input));
      if (!(output instanceof Tensor))
        throw argError('FullyShardedDataParallel.forward', `unit ${k} returned ${describe(output)}, expected a Tensor`);
      this.#trail.push({ input, output });
      this.#free(s);
      h = output;
    }
    // Backward starts with the last unit: its gather overlaps the loss computation.
    if (this.#prefetch) this.#startGather(this.#units[this.#units.length - 1]);
    return h;
  }

  /**
   * Backpropagates `loss` (computed from the last forward's output) unit by unit in reverse,
   * gathering each unit's parameters first, then reduce-scatters each unit's gradients into its
   * blocks' `.grad` (averaged over ranks; added to what an earlier backward left there).
   */
  async backward(loss: Tensor): Promise<void> {
    const op = 'FullyShardedDataParallel.backward';
    if (!(loss instanceof Tensor)) throw argError(op, `expected the loss Tensor, got ${describe(loss)}`);
    if (this.#trail.length !== this.#units.length) throw flockError('ERR_AUTOGRAD', op, 'call forward() before backward()');
    const scatters: Array<{ work: Work; input: Tensor; out: Tensor; shard: Tensor }> = [];
    try {
      for (let k = this.#units.length - 1; k >= 0; k--) {
        const s = this.#units[k];
        await this.#materialize(s);
        if (this.#prefetch && k > 0) this.#startGather(this.#units[k - 1]);
        // What the unit's graph holds (activations) goes once its backward has run, as tidy would.
        const inner = intermediates(this.#trail[k].output, this.#trail[k].input);
        if (k === this.#units.length - 1) loss.backward();
        else if (this.#trail[k].output.requiresGrad) {
          const g = this.#trail[k + 1].input.grad;
          if (!g)
            throw flockError(
              'ERR_AUTOGRAD',
              op,
              `no gradient reached the input of unit ${k + 1}: the loss must depend on the last unit's output`,
            );
          this.#trail[k].output.backward(g);
        }
        for (const t of inner) t.dispose();
        s.spaces.forEach((sp, i) => {
          const input = keep(tidy(() => flatten(sp, (p) => p.grad)));
          const out = keep(zeros([sp.per], { dtype: sp.dtype as 'f32', device: sp.device }));
          scatters.push({ work: this.#reduceScatter(out, input), input, out, shard: s.shards[i] });
          for (const p of sp.params) {
            p.grad?.dispose();
            p.grad = null;
          }
        });
        this.#free(s);
      }
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
      this.#clearTrail();
    }
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
        for (const s of this.#units) if (s.materialized) this.#free(s);
      },
    };
  }

  /** Gathers every unit's parameters into the units' own tensors (for evaluation or saving) until the next forward. */
  async gatherAll(): Promise<void> {
    for (const s of this.#units) this.#startGather(s);
    for (const s of this.#units) await this.#materialize(s);
  }

  /** Frees the shards and the gathered parameters; the units' tensors keep what they hold now. */
  dispose(): void {
    this.#clearTrail();
    for (const s of this.#units) {
      for (const t of s.shards) {
        t.grad?.dispose();
        t.dispose();
      }
      for (const t of s.empty.values()) t.dispose();
      s.empty.clear();
    }
  }

  #clearTrail(): void {
    for (const [k, b] of this.#trail.entries()) {
      if (k > 0) {
        b.input.grad?.dispose();
        b.input.dispose();
      }
      if (k < this.#trail.length - 1) b.output.dispose();
    }
    this.#trail = [];
  }

  #startGather(s: UnitState): void {
    if (s.gathering || s.materialized) return;
    const fulls = s.spaces.map((sp) => keep(zeros([sp.per * sp.worldSize], { dtype: sp.dtype as 'f32', device: sp.device })));
    const works = fulls.map((f, i) => (this.#group ? this.#group.allGather(f, s.shards[i]) : dist.allGather(f, s.shards[i])));
    s.gathering = { fulls, done: Promise.all(works.map((w) => w.wait())).then(() => undefined) };
  }

  /** Waits for `s`'s gather (starting it if needed) and points its parameters at the gathered values. */
  async #materialize(s: UnitState): Promise<void> {
    if (s.materialized) return;
    this.#startGather(s);
    const g = s.gathering!;
    try {
      await g.done;
      noGrad(() =>
        tidy(() =>
          s.spaces.forEach((sp, i) =>
            sp.params.forEach((p, j) =>
              p._adopt(
                g.fulls[i]
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
      for (const f of g.fulls) f.dispose();
      s.gathering = null;
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

/** The non-leaf tensors `output` was computed from, back to `input` (both excluded). */
function intermediates(output: Tensor, input: Tensor): Tensor[] {
  const out: Tensor[] = [];
  const seen = new Set<Tensor>([output, input]);
  const stack = [...(output.gradFn?.inputs ?? [])];
  while (stack.length) {
    const t = stack.pop()!;
    if (seen.has(t) || !t.gradFn) continue;
    seen.add(t);
    out.push(t);
    stack.push(...t.gradFn.inputs);
  }
  return out;
}
