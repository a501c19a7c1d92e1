/**
 * DistributedDataParallel: one process per rank, each with a full replica. Parameters (frozen ones
 * too) are broadcast from rank 0 when it is created; during backward each gradient bucket is
 * averaged across ranks by an allreduce started from the parameters' gradient hooks as soon as the
 * bucket's last gradient is final, overlapping the rest of backward.
 *
 * Buffers (BatchNorm running statistics) follow rank 0 as in PyTorch: broadcast at creation and,
 * unless `broadcastBuffers` is false, after every synchronised step, so the next forward on every
 * rank starts from rank 0's.
 *
 * It wraps anything with `parameters(): Tensor[]` (and optionally `buffers(): Tensor[]`) plus the
 * function that runs the forward pass, so it works with nn.Module and with hand-written models:
 *
 *   const ddp = await fl.parallel.DistributedDataParallel.create(model, (x) => model.forward(x));
 *   const loss = lossFn(ddp.forward(x), y);
 *   loss.backward();
 *   await ddp.syncGradients();   // waits for the bucket allreduces; .grad now holds the average
 *   optimizer.step();
 */
import { Tensor } from '../tensor';
import { keep, tidy } from '../memory';
import { noGrad } from '../dispatch/grad_mode';
import { native } from '../native';
import { normalizeDevice } from '../device';
import { cat } from '../ops/shape';
import { copy_ } from '../ops/elementwise';
import { distError } from '../distributed/errors';
import { getWorldSize, isInitialized, ProcessGroup } from '../distributed/process_group';
import { broadcast as defaultBroadcast, allReduce as defaultAllReduce } from '../distributed/process_group';
import { reduceScatter as defaultReduceScatter } from '../distributed/process_group';
import { zeros } from '../ops/creation';
import { type FlatSpace, makeSpace } from './zero/layout';
import type { Work } from '../distributed/work';
import { BucketReducer, localGrad } from './buckets';
import { WrappedUnits } from './zero/wrap';
import { runWithoutSync } from './no_sync';
import { argError, checkOptions, describe, flockError } from '../errors';
import { checkBool, checkChoice, checkCreateKey, checkNumber } from '../validate';

export interface ParameterSource {
  parameters(): Tensor[];
  /** Non-trainable state kept equal across ranks (nn.Module's running statistics). */
  buffers?(): Tensor[];
}

export interface DDPOptions {
  /** Group to average over (default: the world). */
  group?: ProcessGroup;
  /** Bucket size cap in MiB (default 25). */
  bucketCapMB?: number;
  /** Broadcast rank 0's buffers after each synchronised step (default true, as PyTorch). */
  broadcastBuffers?: boolean;
  /**
   * Parameters that a step's forward output does not depend on contribute a zero gradient
   * instead of failing syncGradients() (default false, as PyTorch: the search walks the graph
   * from the forward outputs once per step, which costs a little).
   */
  findUnusedParameters?: boolean;
  /**
   * Sends f32/f64 gradient buckets as 16-bit floats, halving the bytes on the wire (as PyTorch's
   * fp16/bf16 compress hooks): each rank divides by the world size, casts, the ranks sum, and the
   * result is cast back. 'bf16' keeps f32's range; 'fp16' keeps 3 more mantissa bits. Default 'none'.
   */
  compression?: 'none' | 'fp16' | 'bf16';
  /**
   * ZeRO (DeepSpeed's stages; build the optimizer with `new fl.parallel.ZeroRedundancyOptimizer(ddp,
   * OptimizerClass, options)`): 1 shards the optimizer state over the ranks (the gradient buckets
   * are allreduced as usual); 2 shards the gradients too: each bucket is reduce-scattered from the
   * gradient hooks, overlapping backward, and each rank keeps only its averaged block (the full
   * `.grad` is freed at syncGradients). 3 shards the parameters too, per unit (as PyTorch FSDP): the
   * units are the model's children (a ModuleList's or ModuleDict's children in its place) or the
   * `units` option, and every trainable parameter must belong to one; each unit's `forward` is
   * wrapped on the instance, so whenever the forward function calls a unit its parameters are
   * all-gathered just for that call (the next unit's gather prefetched) and freed after, and again
   * for its backward, then its gradients are reduce-scattered. Between steps a rank holds 1/N of
   * the parameters, gradients and optimizer state; the model's own parameter tensors are empty
   * (shape [0]) outside a unit's call (`ddp.gatherAll()` fills them until the next forward). A
   * parameter that gets no gradient in a step gets none in its block either, so the optimizer
   * skips it (so unused parameters never fail syncGradients, whatever findUnusedParameters says).
   * Stage 3 reduces no buckets: bucketCapMB, compression and noSync are refused, and lastStep is
   * not measured. Default 0: plain data parallelism.
   */
  zeroStage?: 0 | 1 | 2 | 3;
  /** zeroStage 3: the modules to shard, each gathered around its calls (default: the model's children). */
  units?: { parameters(): Tensor[]; forward(...args: never[]): unknown }[];
  /** zeroStage 3: issue the next unit's all-gather while the current one computes (default true). */
  prefetch?: boolean;
}

/**
 * Timing of the last synchronised step. Allreduces run while the device still computes the rest
 * of backward; what is left after the device has finished backward is exposed communication.
 */
export interface DDPStepStats {
  /** How long after the device finished backward the last bucket's allreduce completed (≥ 0). */
  exposedMs: number;
  /** When the device finished backward, and when the last allreduce completed (performance.now()). */
  computeDoneAt: number;
  commDoneAt: number;
}

/** What DistributedDataParallel.create passes its constructor: a user's `new` has no such key and is refused. */
const CREATE: unique symbol = Symbol('DistributedDataParallel.create');

export class DistributedDataParallel<Args extends unknown[], Out> {
  readonly module: ParameterSource;
  readonly #forward: (...args: Args) => Out;
  readonly #group: ProcessGroup | undefined;
  readonly #broadcastBuffers: boolean;
  readonly #findUnused: boolean;
  readonly #compression: 'none' | 'fp16' | 'bf16';
  readonly #params: Tensor[];
  readonly #reducer: BucketReducer;
  readonly #zeroStage: 0 | 1 | 2 | 3;
  readonly #units: unknown;
  readonly #prefetch: boolean;
  /** zeroStage 3: the sharded units. */
  #sharded: WrappedUnits | null = null;
  /** ZeRO: each bucket as a flat space; stage 2: this rank's averaged block of each, and the padded inputs in flight. */
  readonly #spaces: FlatSpace[] = [];
  #gradShards: (Tensor | null)[] = [];
  #padded: Tensor[] = [];
  #syncing = true;
  /** Parameters this step's forward outputs depend on (findUnusedParameters). */
  #reachable = new Set<Tensor>();
  #unusedMarked = false;
  #unused = new Set<Tensor>();
  #removeHooks: (() => void)[] = [];
  /** Timing of the last syncGradients(); see {@link DDPStepStats}. */
  lastStep: DDPStepStats | null = null;

  private constructor(key: typeof CREATE, module: ParameterSource, forward: (...args: Args) => Out, options: DDPOptions) {
    checkCreateKey('DistributedDataParallel', key, CREATE, 'await fl.parallel.DistributedDataParallel.create(model, forward, options)');
    const op = 'DistributedDataParallel';
    if (!module || typeof module.parameters !== 'function')
      throw argError(op, `the model must have a parameters(): Tensor[] method, got ${describe(module)}`);
    if (typeof forward !== 'function') throw argError(op, `forward must be a function, got ${describe(forward)}`);
    const o = checkOptions(op, options, [
      'group',
      'bucketCapMB',
      'broadcastBuffers',
      'findUnusedParameters',
      'compression',
      'zeroStage',
      'units',
      'prefetch',
    ]);
    if (o.group !== undefined && !(o.group instanceof ProcessGroup))
      throw argError(op, `group must be a ProcessGroup, got ${describe(o.group)}`);
    if (!o.group && !isInitialized()) throw flockError('ERR_ARG', op, 'call fl.distributed.initProcessGroup() first');
    this.module = module;
    this.#forward = forward;
    this.#group = o.group;
    this.#broadcastBuffers = checkBool(op, 'broadcastBuffers', o.broadcastBuffers ?? true);
    this.#findUnused = checkBool(op, 'findUnusedParameters', o.findUnusedParameters ?? false);
    this.#compression = checkChoice(op, 'compression', o.compression ?? 'none', ['none', 'fp16', 'bf16']);
    const capMB = checkNumber(op, 'bucketCapMB', o.bucketCapMB ?? 25, { above: 0 });
    const stage = checkNumber(op, 'zeroStage', o.zeroStage ?? 0, { integer: true, min: 0, max: 3 });
    this.#zeroStage = stage as 0 | 1 | 2 | 3;
    if (stage !== 3 && (o.units !== undefined || o.prefetch !== undefined))
      throw argError(op, `units and prefetch shard the parameters per unit: they need zeroStage 3, got zeroStage ${stage}`);
    this.#units = o.units;
    this.#prefetch = checkBool(op, 'prefetch', o.prefetch ?? true);
    if (stage === 3 && (o.bucketCapMB !== undefined || this.#compression !== 'none'))
      throw argError(
        op,
        "zeroStage 3 reduce-scatters each unit's gradients when its backward completes: it has no buckets to size (bucketCapMB) or compress (compression)",
      );
    if (this.#zeroStage === 2 && this.#compression !== 'none')
      throw argError(
        op,
        `compression '${this.#compression}' is not implemented with zeroStage 2 (gradients are reduce-scattered in full precision)`,
      );
    this.#params = module.parameters().filter((p) => p.requiresGrad);
    const cap = capMB * 1024 * 1024;
    // Stage 3: the units' gradients are reduce-scattered by ShardedUnits, no bucket is reduced.
    this.#reducer = new BucketReducer(stage === 3 ? [] : this.#params, cap, (flat, bucket) => this.#launch(flat, bucket));
    if (this.#zeroStage === 1 || this.#zeroStage === 2) {
      const n = this.worldSize;
      for (const b of this.#reducer.buckets) this.#spaces.push(makeSpace(op, b.params, n));
      this.#gradShards = this.#spaces.map(() => null);
    }
    for (const b of this.#reducer.buckets) for (const p of b.params) this.#removeHooks.push(p.registerHook((g) => this.#onGrad(p, g)));
  }

  /** Wraps `module`, after making every rank's parameters equal to rank 0's. */
  static async create<Args extends unknown[], Out>(
    module: ParameterSource,
    forward: (...args: Args) => Out,
    options: DDPOptions = {},
  ): Promise<DistributedDataParallel<Args, Out>> {
    const ddp = new DistributedDataParallel(CREATE, module, forward, options);
    if (ddp.#zeroStage === 3)
      ddp.#sharded = await WrappedUnits.create('DistributedDataParallel', module, ddp.#params, ddp.#units, ddp.#group, ddp.#prefetch);
    else await Promise.all(ddp.#params.map((p) => ddp.#broadcast(p).wait()));
    // Frozen parameters (a LoRA model's base weights) are model state too: as in PyTorch, every
    // rank starts from rank 0's, or the ranks would average gradients of different models.
    await Promise.all(frozenParameters(module).map((p) => ddp.#broadcast(p).wait()));
    await ddp.#syncBuffers();
    return ddp;
  }

  /** Buckets whose allreduce has been started since the last syncGradients (observable mid-backward). */
  get bucketsInFlight(): number {
    return this.#reducer.inFlight;
  }

  /** Element count of each bucket's flat gradient, in the order they are reduced. */
  get bucketSizes(): number[] {
    return this.#reducer.buckets.map((b) => b.numel);
  }

  get bucketCount(): number {
    return this.#reducer.buckets.length;
  }

  get worldSize(): number {
    return this.#group?.size ?? getWorldSize();
  }

  /** Runs the wrapped forward function. */
  forward(...args: Args): Out {
    if (this.#sharded) return this.#sharded.forward('DistributedDataParallel.forward', () => this.#forward(...args));
    const out = this.#forward(...args);
    if (this.#findUnused && this.#syncing) collectLeaves(out, this.#reachable);
    return out;
  }

  /**
   * The module's parameters; with zeroStage 3, this rank's block of each (flat, 1/N), as
   * FullyShardedDataParallel's: the module's own parameters are empty between steps, and
   * syncGradients() puts the averaged gradient blocks on these, so a plain optimizer built on
   * them steps the shards (ZeroRedundancyOptimizer(ddp, ...) does the same and can save sharded state).
   */
  parameters(): Tensor[] {
    if (this.#sharded) return [...this.#sharded.core.shards];
    return this.module.parameters();
  }

  /**
   * Runs `fn` (a step's forward and backward) without averaging gradients: they accumulate
   * locally, and the next synchronised backward averages the accumulated sum.
   */
  noSync<T>(fn: () => T): T {
    if (this.#zeroStage === 3)
      throw flockError(
        'ERR_ARG',
        'DistributedDataParallel.noSync',
        "not implemented with zeroStage 3 (each unit's gradients are reduce-scattered and freed as its backward completes)",
      );
    return runWithoutSync((on) => {
      this.#syncing = on;
    }, fn);
  }

  /**
   * Waits for every bucket's allreduce and writes the averaged gradients into `.grad`. Throws,
   * naming the parameters, when some gradient never arrived during backward (a parameter that
   * did not take part in the loss): the ranks would otherwise disagree on what to reduce. With
   * findUnusedParameters those contribute zeros instead.
   */
  async syncGradients(): Promise<void> {
    if (this.#sharded) {
      const buffersSynced = this.#broadcastBuffers ? this.#syncBuffers() : Promise.resolve();
      await this.#sharded.core.sync();
      await buffersSynced;
      return;
    }
    const missing = this.#reducer.missing();
    if (missing.length && !this.#findUnused) {
      const names = missing.map((p) => `#${this.#params.indexOf(p)} [${p.shape.join(',')}]`);
      this.#reset();
      throw distError(
        'ERR_ARG',
        `DistributedDataParallel: no gradient arrived during backward for parameter(s) ${names.join(', ')}; ` +
          'every parameter must contribute to the loss (or set requiresGrad false on the unused ones, or pass findUnusedParameters: true) before syncGradients()',
      );
    }
    // findUnusedParameters: what backward did not reach contributes zeros (from here if no
    // gradient arrived at all, or the graph reached a parameter that still got none).
    noGrad(() =>
      tidy(() => {
        for (const p of missing) if (!this.#reducer.has(p)) this.#reducer.arrive(p, localGrad(p, null));
      }),
    );
    try {
      // A marker on the compute stream: it resolves with the time the device had run all of
      // backward. Both times are taken natively (epoch ms), then expressed on performance.now().
      const computeDone = native.syncTime(normalizeDevice(this.#params[0]?.device ?? 'cpu', 'syncGradients'));
      // Forward has updated the buffers by now; every rank queues this after the same allreduces.
      const buffersSynced = this.#broadcastBuffers ? this.#syncBuffers() : Promise.resolve();
      // All three settle before any error is thrown (none is left to reject unobserved); when a
      // step failed (fail-stop: on this rank, or ERR_PEER_FAILED from another), the allreduces'
      // error is the one reported, and no gradient is written back.
      const [reduced, synced, computed] = await Promise.allSettled([this.#reducer.wait(), buffersSynced, computeDone]);
      for (const r of [reduced, synced, computed]) if (r.status === 'rejected') throw r.reason;
      const toNow = (epochMs: number) => epochMs - performance.timeOrigin;
      const last = toNow((reduced as PromiseFulfilledResult<number>).value);
      const done = toNow(new Float64Array((computed as PromiseFulfilledResult<ArrayBuffer>).value, 0, 1)[0]);
      this.lastStep = { exposedMs: Math.max(0, last - done), computeDoneAt: done, commDoneAt: last };
      if (this.#zeroStage === 2) {
        // Only this rank's block is kept: the full local gradients go.
        for (const p of this.#params) {
          p.grad?.dispose();
          p.grad = null;
        }
      } else this.#reducer.writeBack();
    } finally {
      this.#reset();
    }
  }

  /** The ZeRO stage this wrapper was created with (0: none). */
  get zeroStage(): 0 | 1 | 2 | 3 {
    return this.#zeroStage;
  }

  /** @internal ZeRO: DDP's buckets as flat spaces (the optimizer's blocks); stage 3: one per parameter. */
  get zeroSpaces(): readonly FlatSpace[] {
    return this.#sharded ? this.#sharded.core.spaces : this.#spaces;
  }

  /** @internal ZeRO stage 3: this rank's parameter blocks, one per space (DDP owns them). */
  get zeroShards(): readonly Tensor[] | undefined {
    return this.#sharded?.core.shards;
  }

  /** @internal ZeRO stage 3: the blocks changed outside a step (a load): drop what was gathered before. */
  zeroReshard(): void {
    this.#sharded?.core.reshard();
  }

  /**
   * zeroStage 3: gathers every unit's parameters into the model's own tensors (for evaluation or
   * saving a whole state dict) until the next forward.
   */
  gatherAll(): void {
    if (!this.#sharded)
      throw flockError(
        'ERR_ARG',
        'DistributedDataParallel.gatherAll',
        `only zeroStage 3 shards the parameters, this is zeroStage ${this.#zeroStage}`,
      );
    this.#sharded.core.gatherAll();
  }

  /** zeroStage 3: units whose all-gather has been issued and not yet used (the prefetched ones). */
  get gathersInFlight(): number {
    return this.#sharded?.core.gathersInFlight ?? 0;
  }

  /** @internal */
  get zeroGroup(): ProcessGroup | undefined {
    return this.#group;
  }

  /** @internal ZeRO stage 2: this rank's averaged gradient block of bucket `i`; stage 3: of parameter block `i` (the caller owns it). */
  takeGradShard(i: number): Tensor | null {
    if (this.#sharded) {
      if (this.#sharded.core.unsynced)
        throw flockError(
          'ERR_ARG',
          'ZeroRedundancyOptimizer.step',
          "the last backward's gradients are not synchronized: await ddp.syncGradients() before the step",
        );
      const shard = this.#sharded.core.shards[i];
      const g = shard.grad;
      shard.grad = null;
      return g;
    }
    const g = this.#gradShards[i];
    this.#gradShards[i] = null;
    return g;
  }

  /** Removes the gradient hooks; the model goes back to plain local training. */
  dispose(): void {
    this.#sharded?.dispose();
    this.#sharded = null;
    for (const r of this.#removeHooks) r();
    this.#removeHooks = [];
    this.#reset();
    for (const g of this.#gradShards) g?.dispose();
    this.#gradShards = this.#gradShards.map(() => null);
  }

  #broadcast(p: Tensor): Work {
    return this.#group ? this.#group.broadcast(p, 0) : defaultBroadcast(p, { src: 0 });
  }

  /** Makes every buffer equal to rank 0's: one broadcast per dtype of the buffers laid end to end. */
  async #syncBuffers(): Promise<void> {
    const buffers = this.module.buffers?.() ?? [];
    const byDtype = new Map<string, Tensor[]>();
    for (const b of buffers) {
      if (!byDtype.has(b.dtype)) byDtype.set(b.dtype, []);
      byDtype.get(b.dtype)!.push(b);
    }
    await Promise.all(
      Array.from(byDtype.values(), async (group) => {
        const flat = keep(
          noGrad(() =>
            cat(
              group.map((b) => b.reshape([-1])),
              0,
            ),
          ),
        );
        try {
          await this.#broadcast(flat).wait();
          noGrad(() =>
            tidy(() => {
              let at = 0;
              for (const b of group) {
                copy_(b, flat.narrow(0, at, b.numel()).reshape([...b.shape]));
                at += b.numel();
              }
            }),
          );
        } finally {
          flat.dispose();
        }
      }),
    );
  }

  #onGrad(p: Tensor, g: Tensor): void {
    if (!this.#syncing) return;
    // Backward has begun, so forward is over: parameters it did not reach are final at zero.
    if (this.#findUnused && !this.#unusedMarked) this.#markUnused();
    if (this.#unused.has(p))
      throw distError(
        'ERR_ARG',
        `DistributedDataParallel: parameter #${this.#params.indexOf(p)} [${p.shape.join(',')}] got a gradient ` +
          'although the forward outputs do not depend on it (its zero gradient is already being reduced); the loss must be computed from ddp.forward() outputs',
      );
    if (this.#reducer.has(p)) return; // a second backward before syncGradients: the first one is in flight
    this.#reducer.arrive(p, localGrad(p, g));
  }

  /** Starts one full bucket's average across ranks (compressed to 16 bits when asked). */
  #launch(flat: Tensor, bucket: number): { work: Work; wire?: Tensor } {
    if (this.#zeroStage === 2) return this.#launchScatter(flat, bucket);
    const reduce = (t: Tensor, op: 'avg' | 'sum') => (this.#group ? this.#group.allReduce(t, { op }) : defaultAllReduce(t, { op }));
    if (this.#compression !== 'none' && (flat.dtype === 'f32' || flat.dtype === 'f64')) {
      // Divided first, so the 16-bit sum cannot overflow where the full-precision one would not.
      const dtype = this.#compression === 'fp16' ? 'f16' : 'bf16';
      const wire = keep(noGrad(() => tidy(() => flat.div(this.worldSize).to(dtype))));
      return { work: reduce(wire, 'sum'), wire };
    }
    return { work: reduce(flat, 'avg') };
  }

  /** ZeRO stage 2: reduce-scatters the bucket (padded to equal blocks), keeping this rank's averaged block. */
  #launchScatter(flat: Tensor, bucket: number): { work: Work } {
    const s = this.#spaces[bucket];
    const pad = s.per * s.worldSize - s.numel;
    const input = pad ? keep(noGrad(() => tidy(() => cat([flat, zeros([pad], { dtype: flat.dtype, device: flat.device })], 0)))) : flat;
    if (pad) this.#padded.push(input);
    this.#gradShards[bucket]?.dispose();
    const out = keep(zeros([s.per], { dtype: flat.dtype, device: flat.device }));
    this.#gradShards[bucket] = out;
    const work = this.#group ? this.#group.reduceScatter(out, input, { op: 'avg' }) : defaultReduceScatter(out, input, { op: 'avg' });
    return { work };
  }

  #markUnused(): void {
    this.#unusedMarked = true;
    noGrad(() =>
      tidy(() => {
        for (const p of this.#params) {
          if (this.#reachable.has(p)) continue;
          this.#unused.add(p);
          if (!this.#reducer.has(p)) this.#reducer.arrive(p, localGrad(p, null));
        }
      }),
    );
  }

  #reset(): void {
    this.#reducer.reset();
    for (const t of this.#padded) t.dispose();
    this.#padded = [];
    this.#reachable.clear();
    this.#unused.clear();
    this.#unusedMarked = false;
  }
}

/** The parameters of `module` that do not require grad, each once. */
function frozenParameters(module: ParameterSource): Tensor[] {
  return [...new Set(module.parameters().filter((p) => !p.requiresGrad))];
}

/** Adds to `into` every leaf requiring grad that the tensors in `out` (a tensor, or arrays and objects of them) depend on. */
function collectLeaves(out: unknown, into: Set<Tensor>): void {
  const stack: Tensor[] = [];
  const visit = (v: unknown): void => {
    if (v instanceof Tensor) stack.push(v);
    else if (Array.isArray(v)) v.forEach(visit);
    else if (v && typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype) Object.values(v).forEach(visit);
  };
  visit(out);
  const seen = new Set<Tensor>();
  while (stack.length) {
    const t = stack.pop()!;
    if (seen.has(t) || !t.requiresGrad) continue;
    seen.add(t);
    if (t.gradFn) stack.push(...t.gradFn.inputs);
    else into.add(t);
  }
}
