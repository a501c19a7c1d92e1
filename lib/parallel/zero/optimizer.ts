/**
 * ZeroRedundancyOptimizer (ZeRO stage 1, as DeepSpeed's and torch.distributed.optim's): the
 * parameters are laid flat and split into equal blocks, one per rank ({@link FlatSpace}); each rank
 * keeps optimizer state for its block only and steps it with the real optimizer class, then the
 * blocks are all-gathered so every rank again holds the whole updated model. Optimizer memory per
 * rank is 1/N of a plain optimizer's.
 *
 *   const opt = new fl.parallel.ZeroRedundancyOptimizer(model.parameters(), fl.optim.Adam, { lr: 1e-3 });
 *   loss.backward();      // each rank: its own batch, local gradients
 *   await opt.step();     // reduce-scatter (average) the gradients, step this rank's block, all-gather
 *
 * Given a DistributedDataParallel created with `zeroStage: 1 | 2 | 3` instead of parameters, it
 * shards DDP's gradient buckets: stage 1 reads its block of the averaged gradients DDP wrote into
 * `.grad`, stage 2 takes the averaged gradient block DDP's bucket reduce-scatters left (no full
 * gradient is kept). Stage 3 steps DDP's own parameter blocks (one per parameter) with the
 * gradient blocks syncGradients() left, and gathers nothing: the next forward does; a parameter
 * that got no gradient is skipped. The flat layout steps elementwise optimizers (SGD, Adam, AdamW) exactly as on whole
 * tensors; every element of a block steps together, so a parameter without a gradient takes part
 * with a zero gradient (parameters that do not require grad are left out). Standalone, the parameters must start equal on every rank (DDP's creation
 * broadcasts rank 0's; otherwise broadcast them), since each rank's block starts from its own.
 */
import { Tensor } from '../../tensor';
import { zeroGrads } from '../../autograd/zero_grad';
import { keep, tidy } from '../../memory';
import { zeros } from '../../ops/creation';
import { stack } from '../../ops/shape';
import { copy_ } from '../../ops/elementwise';
import { noGrad } from '../../dispatch/grad_mode';
import { checkNumber } from '../../validate';
import { Optimizer, type OptimizerStateDict, type ParamsArg, paramGroupList } from '../../optim/optimizer';
import { argError, checkOptions, describe, flockError } from '../../errors';
import type { Shard } from '../../io/sharded';
import { consolidatedStateDict, loadConsolidated, loadZeroSharded, type ShardOwner, saveZeroSharded, shardedState } from './state';
import {
  allGather as defaultAllGather,
  allReduce as defaultAllReduce,
  getRank,
  getWorldSize,
  isInitialized,
  ProcessGroup,
  reduceScatter as defaultReduceScatter,
} from '../../distributed/process_group';
import { type Work, waitAll } from '../../distributed/work';
import { type FlatSpace, flatten, shardValues, spacesByDtype, unflattenInto } from './layout';
import { isUnshardedSource, isZeroGradientSource, type ZeroGradientSource } from './source';

// biome-ignore lint/suspicious/noExplicitAny: optimizer classes differ in their extra constructor arguments
export type OptimizerClass<H extends { lr: number }> = new (params: any, options: Partial<H>) => Optimizer<H>;

export type ZeroOptions<H> = Partial<H> & {
  /** Group to shard over (default: the world). */
  group?: ProcessGroup;
  /**
   * Clip the averaged gradient to this total 2-norm before each step (as DeepSpeed's
   * gradient_clipping; the norm is over every rank's blocks together). Default: no clipping.
   */
  maxGradNorm?: number;
};

export class ZeroRedundancyOptimizer<H extends { lr: number }> {
  /** The local optimizer: it holds and steps this rank's blocks (hand it to LR schedulers). */
  readonly optimizer: Optimizer<H>;
  /** @internal the flat spaces, and this rank's block of each (the tensors the local optimizer steps). */
  readonly spaces: FlatSpace[];
  readonly shards: Tensor[];
  readonly rank: number;
  readonly worldSize: number;
  readonly #group: ProcessGroup | undefined;
  readonly #source: ZeroGradientSource | null;
  /** The user's parameters, in param-group order (state dict indices). */
  readonly #params: Tensor[];
  readonly #counts: number[];
  readonly #maxGradNorm: number | null;
  /** The total 2-norm of the averaged gradient at the last step (before clipping), when maxGradNorm is set. */
  lastGradNorm: number | null = null;

  constructor(
    params: ParamsArg<H> | ZeroGradientSource,
    OptimizerClass: OptimizerClass<H>,
    options: ZeroOptions<H> = {} as ZeroOptions<H>,
  ) {
    const op = 'ZeroRedundancyOptimizer';
    if (typeof OptimizerClass !== 'function' || !(OptimizerClass.prototype instanceof Optimizer))
      throw argError(op, `the optimizer class must be an fl.optim Optimizer class (SGD, Adam, AdamW...), got ${describe(OptimizerClass)}`);
    if (options === null || typeof options !== 'object') throw argError(op, `options must be an object, got ${describe(options)}`);
    const { group, maxGradNorm, ...hyper } = options as ZeroOptions<H> & Record<string, unknown>;
    this.#maxGradNorm = maxGradNorm === undefined ? null : checkNumber(op, 'maxGradNorm', maxGradNorm, { above: 0 });
    if (isUnshardedSource(params))
      throw argError(
        op,
        'the DistributedDataParallel was created without zeroStage; create it with zeroStage: 1, 2 or 3, or pass its parameters()',
      );
    this.#source = isZeroGradientSource(params) ? params : null;
    if (this.#source && group !== undefined)
      throw argError(op, 'the group comes from the DistributedDataParallel it shards; do not pass one');
    const g = this.#source ? this.#source.zeroGroup : group;
    if (g !== undefined && !(g instanceof ProcessGroup)) throw argError(op, `group must be a ProcessGroup, got ${describe(g)}`);
    if (!g && !isInitialized()) throw flockError('ERR_ARG', op, 'call fl.distributed.initProcessGroup() first');
    this.#group = g;
    this.rank = g ? g.rank : getRank();
    this.worldSize = g ? g.size : getWorldSize();

    // The user's groups, then one flat space per (group, dtype, device).
    const groups: Array<{ params: Tensor[]; hyper: Record<string, unknown> }> = [];
    if (this.#source) {
      // Buckets hold the parameters in reverse order; state dicts number them in the model's.
      const ps = this.#source.zeroSpaces.flatMap((s) => s.params);
      groups.push({ params: this.#source.zeroStage === 3 ? ps : ps.reverse(), hyper: {} });
      this.spaces = [...this.#source.zeroSpaces];
    } else {
      groups.push(...normalizeGroups(op, params as ParamsArg<H>));
      this.spaces = [];
    }
    const spaceGroups: number[] = [];
    if (!this.#source)
      groups.forEach((gr, gi) =>
        // Frozen parameters never get a gradient: in a block they would still be decayed.
        spacesByDtype(
          op,
          gr.params.filter((p) => p.requiresGrad),
          this.worldSize,
        ).forEach((s) => {
          this.spaces.push(s);
          spaceGroups.push(gi);
        }),
      );
    else this.spaces.forEach(() => spaceGroups.push(0));
    this.#params = groups.flatMap((gr) => gr.params);
    this.#counts = groups.map((gr) => gr.params.length);
    if (new Set(this.#params).size !== this.#params.length) throw argError(op, 'some parameters appear more than once');
    if (this.spaces.length === 0) throw argError(op, 'none of the parameters requires grad');
    this.shards = this.#source?.zeroShards
      ? [...this.#source.zeroShards]
      : this.spaces.map((s) => shardValues(s, this.rank).requiresGrad_());
    this.optimizer = new OptimizerClass(
      groups.map((gr, gi) => ({ ...gr.hyper, params: this.shards.filter((_, i) => spaceGroups[i] === gi) })),
      hyper as Partial<H>,
    );
  }

  /** Hyper-parameters and this rank's blocks, per group. */
  get paramGroups(): Optimizer<H>['paramGroups'] {
    return this.optimizer.paramGroups;
  }

  /** The parameters this optimizer updates (the whole model's, on every rank). */
  parameters(): Tensor[] {
    return [...this.#params];
  }

  /** Clears (setToNone, the default) or zeroes the parameters' gradients and this rank's gradient blocks. */
  zeroGrad(setToNone = true): void {
    zeroGrads([...this.#params, ...this.shards], setToNone);
  }

  /**
   * Averages the gradients across ranks into this rank's blocks, steps them, and all-gathers the
   * updated blocks into every rank's parameters. A collective: every rank must call it.
   */
  async step(): Promise<void> {
    const grads = await this.#gradBlocks();
    if (this.#maxGradNorm !== null)
      await this.#clip(
        grads.filter((g) => g !== null),
        this.#maxGradNorm,
      );
    this.shards.forEach((s, i) => {
      s.grad?.dispose();
      s.grad = grads[i];
    });
    this.optimizer.step();
    // The blocks' gradients are made afresh by every step: holding them until the next would only cost memory.
    for (const sh of this.shards) {
      sh.grad?.dispose();
      sh.grad = null;
    }
    // Stage 3: the next forward gathers the stepped blocks; what gatherAll() filled is stale now.
    if (this.#source?.zeroShards) this.#source.zeroReshard?.();
    else await this.gatherParams();
  }

  /** All-gathers every rank's block into the parameters (what step() ends with; stage 3: the next forward gathers). */
  async gatherParams(): Promise<void> {
    if (this.#source?.zeroShards) return this.#source.zeroReshard?.();
    const fulls = this.spaces.map((s) => keep(zeros([s.per * s.worldSize], { dtype: s.dtype as 'f32', device: s.device })));
    try {
      await waitAll(fulls.map((f, i) => this.#allGather(f, this.shards[i])));
      this.spaces.forEach((s, i) => unflattenInto(s, fulls[i]));
    } finally {
      for (const f of fulls) f.dispose();
    }
  }

  /** This rank's averaged gradient block of every space, kept. */
  async #gradBlocks(): Promise<(Tensor | null)[]> {
    const src = this.#source;
    if (src?.zeroStage === 3) return this.spaces.map((_, i) => src.takeGradShard(i));
    if (src?.zeroStage === 2) {
      const blocks = this.spaces.map((_, i) => src.takeGradShard(i));
      if (blocks.some((b) => b === null)) {
        for (const b of blocks) b?.dispose();
        throw flockError(
          'ERR_ARG',
          'ZeroRedundancyOptimizer.step',
          'no averaged gradient blocks from the DistributedDataParallel (zeroStage 2): await ddp.syncGradients() after backward, once per step()',
        );
      }
      return blocks as Tensor[];
    }
    const block = (s: FlatSpace) =>
      keep(
        tidy(() =>
          flatten(s, (p) => (p.grad && !p.grad.isDisposed ? p.grad : null))
            .narrow(0, this.rank * s.per, s.per)
            .clone(),
        ),
      );
    // Stage 1 under DDP: .grad already holds the average.
    if (src) return this.spaces.map(block);
    const inputs = this.spaces.map((s) => keep(tidy(() => flatten(s, (p) => (p.grad && !p.grad.isDisposed ? p.grad : null)))));
    const outs = this.spaces.map((s) => keep(zeros([s.per], { dtype: s.dtype as 'f32', device: s.device })));
    try {
      await waitAll(outs.map((o, i) => this.#reduceScatter(o, inputs[i])));
    } catch (e) {
      for (const o of outs) o.dispose();
      throw e;
    } finally {
      for (const t of inputs) t.dispose();
    }
    return outs;
  }

  /** Scales the blocks so that the gradient over all ranks has 2-norm at most `maxNorm`. */
  async #clip(blocks: Tensor[], maxNorm: number): Promise<void> {
    const sq = keep(
      noGrad(() =>
        tidy(() =>
          stack(blocks.map((b) => b.to('f64').square().sum()))
            .sum()
            .reshape([1]),
        ),
      ),
    );
    try {
      await waitAll([this.#group ? this.#group.allReduce(sq) : defaultAllReduce(sq)]);
      const total = Math.sqrt(Number((await sq.data())[0]));
      this.lastGradNorm = total;
      const coef = maxNorm / (total + 1e-6);
      if (coef < 1) noGrad(() => tidy(() => blocks.forEach((b) => copy_(b, b.mul(coef)))));
    } finally {
      sq.dispose();
    }
  }

  #reduceScatter(out: Tensor, input: Tensor): Work {
    return this.#group ? this.#group.reduceScatter(out, input, { op: 'avg' }) : defaultReduceScatter(out, input, { op: 'avg' });
  }

  #allGather(out: Tensor, input: Tensor): Work {
    return this.#group ? this.#group.allGather(out, input) : defaultAllGather(out, input);
  }

  /**
   * Every parameter's whole optimizer state in a plain optimizer's stateDict() layout (loadable
   * into one, or into a ZeroRedundancyOptimizer at any world size). A collective: every rank gets it.
   */
  consolidatedStateDict(): Promise<OptimizerStateDict> {
    return consolidatedStateDict(this);
  }

  /** Loads a consolidated state dict (any world size, or a plain optimizer's); each rank keeps its blocks. */
  loadStateDict(sd: OptimizerStateDict): void {
    loadConsolidated(this, sd);
  }

  /** This rank's blocks of the parameters and optimizer state, as lib/io/sharded.ts pieces. */
  shardedStateDict(): Record<string, Tensor | Shard> {
    return shardedState(this.#owner());
  }

  #owner(): ShardOwner {
    return {
      spaces: this.spaces,
      shards: this.shards,
      optimizer: this.optimizer,
      rank: this.rank,
      worldSize: this.worldSize,
      afterLoad: () => this.gatherParams(),
    };
  }

  /** Saves this rank's blocks under `dir` (files `<prefix>-0000r-of-0000N.safetensors` and an index). A collective. */
  saveSharded(dir: string, options: { prefix?: string } = {}): Promise<void> {
    const { prefix } = checkOptions('ZeroRedundancyOptimizer.saveSharded', options, ['prefix']);
    return saveZeroSharded(this.#owner(), dir, prefix);
  }

  /** Loads blocks saved at any world size, then all-gathers the parameters. A collective. */
  loadSharded(dir: string, options: { prefix?: string } = {}): Promise<void> {
    const { prefix } = checkOptions('ZeroRedundancyOptimizer.loadSharded', options, ['prefix']);
    return loadZeroSharded(this.#owner(), dir, prefix);
  }

  /** Frees this rank's blocks and the local optimizer's state; the parameters keep their values. */
  dispose(): void {
    for (const st of this.optimizer.state.values()) for (const v of Object.values(st)) if (v instanceof Tensor) v.dispose();
    this.optimizer.state.clear();
    for (const sh of this.shards) {
      sh.grad?.dispose();
      sh.grad = null;
      // Stage 3: the blocks are DDP's parameters.
      if (!this.#source?.zeroShards) sh.dispose();
    }
  }

  /** @internal how many of the user's parameters each group has. */
  _paramCounts(): number[] {
    return this.#counts;
  }

  /** @internal the user's parameters in state-dict order. */
  get _params(): readonly Tensor[] {
    return this.#params;
  }

  /** @internal */
  get _group(): ProcessGroup | undefined {
    return this.#group;
  }
}

function normalizeGroups<H>(op: string, params: ParamsArg<H>): Array<{ params: Tensor[]; hyper: Record<string, unknown> }> {
  return paramGroupList(op, params).map((g, i) => {
    const { params: ps, ...hyper } = g as { params: unknown } & Record<string, unknown>;
    const arr =
      ps instanceof Tensor ? [ps] : ps && typeof ps === 'object' && Symbol.iterator in ps ? Array.from(ps as Iterable<unknown>) : null;
    if (!arr || arr.length === 0 || !arr.every((p) => p instanceof Tensor))
      throw argError(op, `paramGroups[${i}].params must be a non-empty list of tensors, got ${describe(ps)}`);
    return { params: arr as Tensor[], hyper };
  });
}
