/**
 * FullyShardedDataParallel (ZeRO stage 3, as PyTorch FSDP): the model is a chain of units (the
 * children of an nn.Module, or an explicit list), run in order. Each parameter is sharded over the
 * ranks, gathered around its unit's forward and backward and freed after, with prefetch; see
 * {@link ShardedUnits} (lib/parallel/zero/units.ts, shared with DDP's `zeroStage: 3`). Between
 * steps a rank holds only its blocks — parameters, gradients and (with a plain optimizer on
 * {@link parameters}) optimizer state are all 1/N. {@link syncGradients} awaits the gradients'
 * reduce-scatters and adds each block's averaged gradient into the block's `.grad`, as DDP's does;
 * a parameter that got no gradient gets none, so the optimizer skips it as in one process:
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
import { noGrad } from '../../dispatch/grad_mode';
import { zeros } from '../../ops/creation';
import { argError, checkOptions, describe, flockError } from '../../errors';
import { checkBool, checkCreateKey, checkNumber } from '../../validate';
import { gradNorm } from '../../optim/clip';
import { copy_ } from '../../ops/elementwise';
import { type ProcessGroup, isInitialized } from '../../distributed/process_group';
import * as dist from '../../distributed/process_group';
import { Optimizer } from '../../optim/optimizer';
import { loadZeroSharded, saveZeroSharded, type ShardOwner } from './state';
import { ShardedUnits } from './units';

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

/** What FullyShardedDataParallel.create passes its constructor: a user's `new` has no such key and is refused. */
const CREATE: unique symbol = Symbol('FullyShardedDataParallel.create');

export class FullyShardedDataParallel {
  readonly #core: ShardedUnits;
  readonly #units: ShardedUnit[];
  readonly #group: ProcessGroup | undefined;
  readonly rank: number;
  readonly worldSize: number;

  private constructor(key: typeof CREATE, core: ShardedUnits, units: ShardedUnit[], group: ProcessGroup | undefined) {
    checkCreateKey('FullyShardedDataParallel', key, CREATE, 'await fl.parallel.FullyShardedDataParallel.create(model, options)');
    this.#core = core;
    this.#units = units;
    this.#group = group;
    this.rank = core.rank;
    this.worldSize = core.worldSize;
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
    const prefetch = checkBool(op, 'prefetch', o.prefetch ?? true);
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
    // Its forward runs the children only: parameters of the model's own would never take part.
    const whole = (model as { parameters?: () => Tensor[] }).parameters;
    if (!Array.isArray(model) && typeof whole === 'function') {
      const held = new Set((units as ShardedUnit[]).flatMap((u) => u.parameters()));
      const own = whole.call(model).filter((p) => p.requiresGrad && !held.has(p));
      if (own.length)
        throw argError(
          op,
          `it runs the model's children in order, so the model's ${own.length} trainable parameter(s) in no child (${own
            .slice(0, 4)
            .map((p) => `[${p.shape.join(',')}]`)
            .join(
              ', ',
            )}) would never be used: move them into a child, or use DistributedDataParallel with zeroStage 3 (a root unit holds them)`,
        );
    }
    const core = await ShardedUnits.create(op, units as ShardedUnit[], o.group, prefetch);
    // Frozen parameters stay whole on every rank (nothing to shard without gradients or optimizer
    // state), and start from rank 0's values as the sharded ones do.
    const frozen = [...new Set((units as ShardedUnit[]).flatMap((u) => u.parameters()).filter((p) => !p.requiresGrad))];
    await Promise.all(frozen.map((p) => (o.group ? o.group.broadcast(p, 0) : dist.broadcast(p, { src: 0 })).wait()));
    return new FullyShardedDataParallel(CREATE, core, units as ShardedUnit[], o.group);
  }

  /** Units whose all-gather has been issued and not yet adopted by their parameters (the prefetched ones). */
  get gathersInFlight(): number {
    return this.#core.gathersInFlight;
  }

  /** This rank's block of every parameter (flat, 1/N of each): what the optimizer steps. */
  parameters(): Tensor[] {
    return [...this.#core.shards];
  }

  /**
   * Runs the units in order on `x`, each with its parameters gathered just for its forward. When
   * grad mode is on, each unit's output carries the node that gathers the unit again for backward.
   */
  forward(x: Tensor): Tensor {
    const op = 'FullyShardedDataParallel.forward';
    if (!(x instanceof Tensor)) throw argError(op, `expected a Tensor, got ${describe(x)}`);
    this.#core.beginForward(op);
    let h = x;
    try {
      for (let k = 0; k < this.#units.length; k++) {
        const u = this.#units[k];
        const out = this.#core.runUnit(op, k, () => u.forward(h));
        if (!(out instanceof Tensor)) throw argError(op, `unit ${k} returned ${describe(out)}, expected a Tensor`);
        h = out;
      }
    } finally {
      this.#core.endForward(h);
    }
    return h;
  }

  /**
   * Awaits the reduce-scatters of the last backward and adds each block's averaged gradient into
   * its `.grad` (units whose backward some parameters took no part in are reduce-scattered now;
   * those parameters' blocks get no gradient). Call it after `loss.backward()` and before the
   * optimizer's step.
   */
  syncGradients(): Promise<void> {
    return this.#core.sync();
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
      spaces: this.#core.spaces,
      shards,
      optimizer: optimizer ?? null,
      rank: this.rank,
      worldSize: this.worldSize,
      afterLoad: async () => this.#core.reshard(),
    };
  }

  /** Gathers every unit's parameters into the units' own tensors (for evaluation or saving) until the next forward. */
  gatherAll(): void {
    this.#core.gatherAll();
  }

  /** Frees the shards and the gathered parameters and removes the gradient hooks; the units' tensors keep what they hold now. */
  dispose(): void {
    this.#core.dispose();
  }
}
