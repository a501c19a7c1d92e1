/**
 * DistributedDataParallel: one process per rank, each with a full replica. Parameters are
 * broadcast from rank 0 when it is created; during backward each gradient bucket is averaged
 * across ranks by an allreduce started from the parameters' gradient hooks as soon as the
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
import type { Tensor } from '../tensor';
import { keep, tidy } from '../memory';
import { noGrad } from '../autograd/grad_mode';
import { native } from '../native';
import { normalizeDevice } from '../device';
import { cat } from '../ops/shape';
import { copy_ } from '../ops/elementwise';
import { distError } from '../distributed/errors';
import { getWorldSize, isInitialized, type ProcessGroup } from '../distributed/process_group';
import { broadcast as defaultBroadcast, allReduce as defaultAllReduce } from '../distributed/process_group';
import type { Work } from '../distributed/work';
import { makeBuckets, type Bucket } from './buckets';

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
}

interface BucketState {
  bucket: Bucket;
  grads: (Tensor | null)[];
  arrived: number;
  flat: Tensor | null;
  work: Work | null;
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

export class DistributedDataParallel<Args extends unknown[], Out> {
  readonly module: ParameterSource;
  readonly #forward: (...args: Args) => Out;
  readonly #group: ProcessGroup | undefined;
  readonly #broadcastBuffers: boolean;
  readonly #params: Tensor[];
  readonly #states: BucketState[];
  readonly #index = new Map<Tensor, [BucketState, number]>();
  #syncing = true;
  #removeHooks: (() => void)[] = [];
  /** Timing of the last syncGradients(); see {@link DDPStepStats}. */
  lastStep: DDPStepStats | null = null;

  private constructor(module: ParameterSource, forward: (...args: Args) => Out, options: DDPOptions) {
    if (!module || typeof module.parameters !== 'function')
      throw new TypeError('DistributedDataParallel: the model must have a parameters(): Tensor[] method');
    if (typeof forward !== 'function') throw new TypeError('DistributedDataParallel: forward must be a function');
    if (!options.group && !isInitialized()) throw distError('ERR_ARG', 'DistributedDataParallel: call fl.distributed.initProcessGroup() first');
    this.module = module;
    this.#forward = forward;
    this.#group = options.group;
    this.#broadcastBuffers = options.broadcastBuffers ?? true;
    this.#params = module.parameters().filter((p) => p.requiresGrad);
    const cap = (options.bucketCapMB ?? 25) * 1024 * 1024;
    this.#states = makeBuckets(this.#params, cap).map((bucket) => ({ bucket, grads: bucket.params.map(() => null), arrived: 0, flat: null, work: null }));
    for (const s of this.#states)
      s.bucket.params.forEach((p, i) => {
        this.#index.set(p, [s, i]);
        this.#removeHooks.push(p.registerHook((g) => this.#onGrad(p, g)));
      });
  }

  /** Wraps `module`, after making every rank's parameters equal to rank 0's. */
  static async create<Args extends unknown[], Out>(module: ParameterSource, forward: (...args: Args) => Out, options: DDPOptions = {}): Promise<DistributedDataParallel<Args, Out>> {
    const ddp = new DistributedDataParallel(module, forward, options);
    await Promise.all(ddp.#params.map((p) => ddp.#broadcast(p).wait()));
    await ddp.#syncBuffers();
    return ddp;
  }

  /** Buckets whose allreduce has been started since the last syncGradients (observable mid-backward). */
  get bucketsInFlight(): number {
    return this.#states.filter((s) => s.work !== null).length;
  }

  /** Element count of each bucket's flat gradient, in the order they are reduced. */
  get bucketSizes(): number[] {
    return this.#states.map((s) => s.bucket.params.reduce((n, p) => n + p.size, 0));
  }

  get bucketCount(): number {
    return this.#states.length;
  }

  get worldSize(): number {
    return this.#group?.size ?? getWorldSize();
  }

  /** Runs the wrapped forward function. */
  forward(...args: Args): Out {
    return this.#forward(...args);
  }

  parameters(): Tensor[] {
    return this.module.parameters();
  }

  /**
   * Runs `fn` (a step's forward and backward) without averaging gradients: they accumulate
   * locally, and the next synchronised backward averages the accumulated sum.
   */
  noSync<T>(fn: () => T): T {
    this.#syncing = false;
    let result: T;
    try {
      result = fn();
    } catch (e) {
      this.#syncing = true;
      throw e;
    }
    if (result instanceof Promise) return result.finally(() => (this.#syncing = true)) as T;
    this.#syncing = true;
    return result;
  }

  /**
   * Waits for every bucket's allreduce and writes the averaged gradients into `.grad`. Throws,
   * naming the parameters, when some gradient never arrived during backward (a parameter that
   * did not take part in the loss): the ranks would otherwise disagree on what to reduce.
   */
  async syncGradients(): Promise<void> {
    const missing: string[] = [];
    for (const s of this.#states)
      s.bucket.params.forEach((p, i) => {
        if (!s.grads[i] && !s.work) missing.push(`#${this.#params.indexOf(p)} [${p.shape.join(',')}]`);
      });
    if (missing.length) {
      this.#reset();
      throw distError('ERR_ARG', `DistributedDataParallel: no gradient arrived during backward for parameter(s) ${missing.join(', ')}; ` +
        'every parameter must contribute to the loss (or set requiresGrad false on the unused ones) before syncGradients()');
    }
    try {
      // A marker on the compute stream: it resolves with the time the device had run all of
      // backward. Both times are taken natively (epoch ms), then expressed on performance.now().
      const computeDone = native.syncTime(normalizeDevice(this.#params[0]?.device ?? 'cpu', 'syncGradients'));
      // Forward has updated the buffers by now; every rank queues this after the same allreduces.
      const buffersSynced = this.#broadcastBuffers ? this.#syncBuffers() : Promise.resolve();
      await Promise.all(this.#states.map((s) => s.work!.wait()));
      await buffersSynced;
      const toNow = (epochMs: number) => epochMs - performance.timeOrigin;
      const last = toNow(Math.max(...this.#states.map((s) => s.work!.completedAt ?? Date.now())));
      const done = toNow(new Float64Array(await computeDone, 0, 1)[0]);
      this.lastStep = { exposedMs: Math.max(0, last - done), computeDoneAt: done, commDoneAt: last };
      noGrad(() => {
        for (const s of this.#states) {
          s.bucket.params.forEach((p, i) => {
            const avg = tidy(() => s.flat!.narrow(0, s.bucket.offsets[i], p.size).reshape([...p.shape]).clone());
            p.grad?.dispose();
            p.grad = keep(avg);
          });
        }
      });
    } finally {
      this.#reset();
    }
  }

  /** Removes the gradient hooks; the model goes back to plain local training. */
  dispose(): void {
    for (const r of this.#removeHooks) r();
    this.#removeHooks = [];
    this.#reset();
  }

  #broadcast(p: Tensor): Work {
    return this.#group ? this.#group.broadcast(p, 0) : defaultBroadcast(p, { src: 0 });
  }

  /** Makes every buffer equal to rank 0's: one broadcast per dtype of the buffers laid end to end. */
  async #syncBuffers(): Promise<void> {
    const buffers = this.module.buffers?.() ?? [];
    const byDtype = new Map<string, Tensor[]>();
    for (const b of buffers) byDtype.set(b.dtype, [...(byDtype.get(b.dtype) ?? []), b]);
    await Promise.all(Array.from(byDtype.values(), async (group) => {
      const flat = keep(noGrad(() => cat(group.map((b) => b.reshape([-1])), 0)));
      try {
        await this.#broadcast(flat).wait();
        noGrad(() => tidy(() => {
          let at = 0;
          for (const b of group) {
            copy_(b, flat.narrow(0, at, b.size).reshape([...b.shape]));
            at += b.size;
          }
        }));
      } finally {
        flat.dispose();
      }
    }));
  }

  #onGrad(p: Tensor, g: Tensor): void {
    if (!this.#syncing) return;
    const [s, i] = this.#index.get(p)!;
    if (s.grads[i]) return;  // a second backward before syncGradients: the first one is in flight
    // The full local gradient: what earlier noSync steps accumulated plus this contribution
    // (the engine adds `g` into .grad only after the hooks).
    s.grads[i] = keep(p.grad && !p.grad.isDisposed ? p.grad.add(g).reshape([-1]) : g.reshape([-1]).clone());
    if (++s.arrived < s.grads.length) return;
    s.flat = keep(cat(s.grads as Tensor[], 0));
    for (const t of s.grads) t!.dispose();
    s.grads = s.grads.map(() => null);
    s.work = this.#group ? this.#group.allReduce(s.flat, { op: 'avg' }) : defaultAllReduce(s.flat, { op: 'avg' });
  }

  #reset(): void {
    for (const s of this.#states) {
      for (const t of s.grads) t?.dispose();
      s.grads = s.grads.map(() => null);
      s.flat?.dispose();
      s.flat = null;
      s.work = null;
      s.arrived = 0;
    }
  }
}
