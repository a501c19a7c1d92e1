/**
 * DataParallel: mirrored training on several devices of one process (TensorFlow's
 * MirroredStrategy). Unlike PyTorch's DataParallel, replicas are made once and persist: each has
 * its own parameters and its own optimizer state on its device, and every replica applies the same
 * averaged update, so they stay identical without being copied again each step.
 *
 * A step splits the batch across the devices; each replica's forward and backward is queued on its
 * own device's stream, so the devices compute concurrently. The outputs are gathered onto the
 * first device, where the loss is computed; its backward flows back through the recorded copies.
 * Gradients are bucketed (as DistributedDataParallel's) and each bucket is summed across the
 * replicas through the in-process groups as soon as its last gradient is final, while the rest of
 * backward still runs.
 *
 *   const dp = await fl.parallel.DataParallel.create(model, { devices: ['cpu:0', 'cpu:1'] });
 *   const opt = dp.optimizer(fl.optim.SGD, { lr: 0.1 });
 *   const loss = fl.nn.functional.crossEntropy(dp.forward(x), y.to(dp.outputDevice));
 *   loss.backward();
 *   await dp.step();        // sums the gradients across replicas, steps every replica's optimizer
 *   opt.zeroGrad();
 */
import { Tensor } from '../tensor';
import { tidy } from '../memory';
import { noGrad } from '../dispatch/grad_mode';
import { cat } from '../ops/shape';
import { copy_ } from '../ops/elementwise';
import type { Module } from '../nn/module';
import { type Work, waitAll } from '../distributed/work';
import { initLocalGroups } from '../distributed/local_groups';
import { argError, checkOptions, describe, flockError } from '../errors';
import { checkBool, checkCreateKey, checkNumber } from '../validate';
import { BucketReducer, localGrad } from './buckets';
import { runWithoutSync } from './no_sync';
import { checkDevices, copyTrainingMode, replicate, scatter } from './devices';

/** The collectives a replica needs: a ProcessGroup from initLocalGroups has them. */
export interface ReplicaGroup {
  allReduce(t: Tensor, options?: { op?: 'sum' | 'avg' }): Work;
}

export interface DataParallelOptions {
  /** One replica per device; the first holds `model` itself (moved there). */
  devices: string[];
  /** One group per device (rank i takes tensors on devices[i]); default: initLocalGroups(devices). */
  groups?: ReplicaGroup[];
  /** Bucket size cap in MiB (default 25). */
  bucketCapMB?: number;
  /** Copy the first replica's buffers (BatchNorm running statistics) to the others after each step (default true). */
  broadcastBuffers?: boolean;
}

type Forward = { forward(...inputs: never[]): unknown };

/** One optimizer per replica, stepped together; build it with {@link DataParallel.optimizer}. */
export class ReplicatedOptimizer<O extends { step(): void; zeroGrad(setToNone?: boolean): void }> {
  constructor(readonly optimizers: O[]) {}

  /** Steps every replica's optimizer (after the gradients were synchronised). */
  step(): void {
    for (const o of this.optimizers) o.step();
  }

  zeroGrad(setToNone = true): void {
    for (const o of this.optimizers) o.zeroGrad(setToNone);
  }
}

/** What DataParallel.create passes its constructor: a user's `new` has no such key and is refused. */
const CREATE: unique symbol = Symbol('DataParallel.create');

export class DataParallel<M extends Module & Forward> {
  readonly devices: string[];
  /** The replicas; `replicas[0]` is the model that was passed in. */
  readonly replicas: M[];
  readonly #groups: ReplicaGroup[];
  readonly #reducers: BucketReducer[];
  readonly #broadcastBuffers: boolean;
  #removeHooks: (() => void)[] = [];
  #syncing = true;
  #optimizer: ReplicatedOptimizer<{ step(): void; zeroGrad(setToNone?: boolean): void }> | null = null;

  private constructor(
    key: typeof CREATE,
    model: M,
    devices: string[],
    groups: ReplicaGroup[],
    capBytes: number,
    broadcastBuffers: boolean,
  ) {
    checkCreateKey('DataParallel', key, CREATE, 'await fl.parallel.DataParallel.create(model, { devices })');
    this.devices = devices;
    this.#groups = groups;
    this.#broadcastBuffers = broadcastBuffers;
    model.to(devices[0]);
    this.replicas = devices.map((d, i) => (i === 0 ? model : replicate(model, d)));
    this.#reducers = this.replicas.map((r, i) => {
      const params = r.parameters().filter((p) => p.requiresGrad);
      // A sum, not an average: the loss is taken over the gathered batch, so each replica holds
      // its share of the full gradient.
      const reducer = new BucketReducer(params, capBytes, (flat) => ({ work: this.#groups[i].allReduce(flat, { op: 'sum' }) }));
      for (const p of params)
        this.#removeHooks.push(
          p.registerHook((g) => {
            if (this.#syncing && !reducer.has(p)) reducer.arrive(p, localGrad(p, g));
          }),
        );
      return reducer;
    });
  }

  /**
   * Places `model` on `devices[0]`, makes a replica on each other device, and (unless `groups` is
   * given) creates the in-process groups that reduce their gradients.
   */
  static async create<M extends Module & Forward>(model: M, options: DataParallelOptions): Promise<DataParallel<M>> {
    const op = 'DataParallel';
    if (!model || typeof model.parameters !== 'function' || typeof model.forward !== 'function')
      throw argError(op, `model must be an nn.Module with a forward method, got ${describe(model)}`);
    const o = checkOptions(op, options, ['devices', 'groups', 'bucketCapMB', 'broadcastBuffers']);
    const devices = checkDevices(op, o.devices);
    const capMB = checkNumber(op, 'bucketCapMB', o.bucketCapMB ?? 25, { above: 0 });
    const broadcastBuffers = checkBool(op, 'broadcastBuffers', o.broadcastBuffers ?? true);
    let groups = o.groups;
    if (groups !== undefined) {
      if (!Array.isArray(groups) || groups.length !== devices.length || groups.some((g) => typeof g?.allReduce !== 'function'))
        throw argError(op, `groups must hold one group per device (${devices.length}), got ${describe(groups)}`);
    } else {
      groups = await initLocalGroups(devices);
    }
    return new DataParallel(CREATE, model, devices, groups, capMB * 1024 * 1024, broadcastBuffers);
  }

  /** Buckets of the first replica whose reduction backward has already started (before {@link syncGradients}). */
  get bucketsInFlight(): number {
    return this.#reducers[0].inFlight;
  }

  /** How many gradient buckets each replica reduces per step. */
  get bucketCount(): number {
    return this.#reducers[0].buckets.length;
  }

  /** Where {@link forward} gathers the outputs (the first device): compute the loss there. */
  get outputDevice(): string {
    return this.devices[0];
  }

  /**
   * Splits each tensor argument along dim 0 across the devices, runs every replica on its part
   * (each on its own device's stream), and returns the outputs concatenated on {@link outputDevice}.
   */
  forward(...inputs: Parameters<M['forward']>): Tensor {
    const parts = scatter('DataParallel.forward', inputs, this.devices);
    const outs: Tensor[] = [];
    parts.forEach((args, i) => {
      if (args.length === 0) return;
      copyTrainingMode(this.replicas[0], this.replicas[i]);
      const out = (this.replicas[i].forward as (...a: unknown[]) => unknown)(...args);
      if (!(out instanceof Tensor))
        throw argError('DataParallel.forward', `the model's forward must return a Tensor to gather, got ${describe(out)}`);
      outs.push(out.to(this.devices[0]));
    });
    return outs.length === 1 ? outs[0] : cat(outs, 0);
  }

  /** One optimizer of class `Optimizer` per replica, over that replica's parameters; {@link step} steps them all. */
  optimizer<O extends { step(): void; zeroGrad(setToNone?: boolean): void }, Opts>(
    Optimizer: new (params: Tensor[], options: Opts) => O,
    options: Opts,
  ): ReplicatedOptimizer<O> {
    if (typeof Optimizer !== 'function')
      throw argError('DataParallel.optimizer', `expected an optimizer class such as fl.optim.SGD, got ${describe(Optimizer)}`);
    const opt = new ReplicatedOptimizer(this.replicas.map((r) => new Optimizer(r.parameters(), options)));
    this.#optimizer = opt;
    return opt;
  }

  /**
   * Runs `fn` (forward and backward) without reducing: gradients accumulate on each replica, and
   * the next synchronised backward reduces the accumulated sums.
   */
  noSync<T>(fn: () => T): T {
    return runWithoutSync((on) => {
      this.#syncing = on;
    }, fn);
  }

  /**
   * Waits for every bucket's reduction and writes the summed gradient into each replica's `.grad`
   * (identical on every replica). Parameters no gradient reached contribute zeros.
   */
  async syncGradients(): Promise<void> {
    noGrad(() =>
      tidy(() => {
        for (const r of this.#reducers) for (const p of r.missing()) r.arrive(p, localGrad(p, null));
      }),
    );
    try {
      await waitAll(this.#reducers.map((r) => r.wait()));
      for (const r of this.#reducers) r.writeBack();
    } finally {
      for (const r of this.#reducers) r.reset();
    }
  }

  /** {@link syncGradients}, then every replica's optimizer step, then the buffers made equal. */
  async step(): Promise<void> {
    if (!this.#optimizer) throw flockError('ERR_ARG', 'DataParallel.step', 'create the optimizer with dp.optimizer(Class, options) first');
    await this.syncGradients();
    this.#optimizer.step();
    if (this.#broadcastBuffers) this.syncBuffers();
  }

  /** Copies the first replica's buffers into the others (stream-ordered copies). */
  syncBuffers(): void {
    const [first, ...rest] = this.replicas.map((r) => r.buffers());
    noGrad(() =>
      tidy(() => {
        rest.forEach((bufs, i) => bufs.forEach((b, j) => copy_(b, first[j].to(this.devices[i + 1]))));
      }),
    );
  }

  /** Removes the gradient hooks; the replicas go back to plain local training. */
  dispose(): void {
    for (const r of this.#removeHooks) r();
    this.#removeHooks = [];
    for (const r of this.#reducers) r.reset();
  }
}
