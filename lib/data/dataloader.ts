/**
 * DataLoader: batches of a Dataset with a seeded shuffle (a new permutation per epoch), dropLast
 * and a collate function. Async iteration prefetches: the next batch's ops are queued before the
 * current one is handed out, so gathering overlaps the training step. It is also the loop's
 * back-pressure point: a batch is handed out only once the device queues have drained to their
 * low watermark, on a fresh event-loop turn (see fl.ready), so a `for await` training loop never
 * freezes the process and never runs far ahead of the device.
 */
import { Tensor } from '../tensor';
import { stack } from '../ops/shape';
import { tensor } from '../ops/creation';
import type { Dataset, IterableDataset, SampleDTypes } from './dataset';
import { isIterableDataset } from './dataset';
import { canGetBatch } from './split_concat';
import { type CanonicalDType, isFloating, toDType } from '../dtype';
import { argError, checkOptions, describe, flockError, outOfRange } from '../errors';
import { ready } from '../device';
import { shuffleRng } from './shuffle';

export interface DataLoaderOptions<T, B> {
  batchSize?: number;
  shuffle?: boolean;
  /** Seed of the shuffle; epoch k uses seed + k. */
  seed?: number;
  dropLast?: boolean;
  collate?: (items: T[]) => B;
  /** Where the sample indices come from, e.g. a DistributedSampler; replaces shuffle. */
  sampler?: Iterable<number> & { readonly length: number };
  /**
   * The default collate's dtypes for the sample's fields (replacing the dataset's own `dtypes`).
   * Undeclared number fields take their dtype from the loader's first batch and keep it: a float
   * field stays f32 in a batch of whole numbers, and a fraction in a field that began as i64 is
   * ERR_DTYPE naming the sample, never a batch of another dtype.
   */
  dtypes?: SampleDTypes;
}

/** What defaultCollate makes of a batch of samples of type T (a TensorDataset's batch: Tensor[]). */
export type Collated<T> = T extends Tensor | number
  ? Tensor
  : T extends readonly unknown[]
    ? { -readonly [K in keyof T]: Collated<T[K]> }
    : T extends object
      ? { [K in keyof T]: Collated<T[K]> }
      : T[];

/**
 * Stacks tensors, recurses into arrays and objects, and turns numbers into a tensor. Without a
 * declared dtype, plain numbers that are all integers (a dataset's class labels, by nature) become
 * i64, as PyTorch's collate makes them, and any fraction makes the batch f32; `dtypes` declares
 * them (and casts tensor fields). The DataLoader keeps each field's dtype from its first batch for
 * its whole life (see {@link DataLoaderOptions.dtypes}). Samples of different structure (a missing
 * field, a number where others hold a tensor, tensors of different shapes) are ERR_DATA naming the
 * sample.
 */
export function defaultCollate(items: unknown[], dtypes?: SampleDTypes): unknown {
  if (!Array.isArray(items) || items.length === 0)
    throw argError('defaultCollate', `expected a non-empty array of samples, got ${describe(items)}`);
  return collateSamples(items, { op: 'defaultCollate', name: (i) => `samples[${i}]`, verb: 'is' }, { declared: dtypes, fixed: null });
}

/** How messages name a batch's samples: the user's op, sample i, and the verb for a missing one. */
interface SampleNames {
  op: string;
  name: (i: number) => string;
  verb: 'is' | 'returned';
}

/**
 * Where collate takes dtypes from: the declaration for this part of the sample, and (a loader's)
 * the dtype each number field took in the first batch, by path, so later batches keep it.
 */
interface DTypeSource {
  declared: SampleDTypes;
  fixed: Map<string, CanonicalDType> | null;
  /** Where the declaration came from, for messages. */
  where?: string;
}

/** A sample value for messages: a tensor by its shape and dtype, anything else as `describe` puts it. */
const sampleText = (v: unknown): string => (v instanceof Tensor ? `a ${v.dtype} tensor of shape [${v.shape}]` : describe(v));

function sampleKind(v: unknown): string {
  if (v instanceof Tensor) return 'Tensor';
  if (Array.isArray(v)) return 'array';
  return v === null ? 'null' : typeof v;
}

/** The declaration for part `key` of a sample: a dtype string applies to every field below it. */
function declaredAt(op: string, d: SampleDTypes, key: string | number, path: string, where: string): SampleDTypes {
  if (d === undefined || typeof d === 'string') return d;
  if (typeof key === 'number' ? !Array.isArray(d) : Array.isArray(d) || typeof d !== 'object')
    throw argError(op, `${where}${path} is ${describe(d)}, but the sample${path} is ${typeof key === 'number' ? 'an array' : 'an object'}`);
  return (d as Record<string | number, SampleDTypes>)[key];
}

function leafDType(op: string, d: SampleDTypes, path: string, where: string): CanonicalDType | undefined {
  if (d === undefined) return undefined;
  if (typeof d !== 'string') throw argError(op, `${where}${path} must be a dtype for a number or tensor field, got ${describe(d)}`);
  return toDType(op, d);
}

/** defaultCollate of `items`, the values at `path` (`''`, `[1]`, `.label`, ...) of each sample. */
function collateSamples(items: unknown[], names: SampleNames, types: DTypeSource, path = ''): unknown {
  const first = items[0];
  const kind = sampleKind(first);
  items.forEach((it, i) => {
    if (it === undefined || it === null)
      throw flockError(
        'ERR_DATA',
        names.op,
        `${names.name(i)}${path} ${path ? 'is' : names.verb} ${describe(it)}, which cannot be batched`,
      );
    if (sampleKind(it) !== kind)
      throw flockError(
        'ERR_DATA',
        names.op,
        `${names.name(i)}${path} is ${sampleText(it)}, but ${names.name(0)}${path} is ${sampleText(first)}`,
      );
    if (it instanceof Tensor && (it.ndim !== (first as Tensor).ndim || it.shape.some((s, d) => s !== (first as Tensor).shape[d])))
      throw flockError(
        'ERR_SHAPE',
        names.op,
        `${names.name(i)}${path} has shape [${it.shape}], but ${names.name(0)}${path} has shape [${(first as Tensor).shape}]`,
      );
  });
  const where = types.where ?? 'dtypes';
  if (first instanceof Tensor) {
    const d = leafDType(names.op, types.declared, path, where);
    const out = stack(items as Tensor[]);
    if (d === undefined || out.dtype === d) return out;
    const cast = out.to(d);
    out.dispose();
    return cast;
  }
  if (typeof first === 'number') return collateNumbers(items as number[], names, types, path, where);
  if (Array.isArray(first))
    return first.map((_, i) =>
      collateSamples(
        items.map((it) => (it as unknown[])[i]),
        names,
        { ...types, declared: declaredAt(names.op, types.declared, i, path, where) },
        `${path}[${i}]`,
      ),
    );
  if (typeof first === 'object') {
    const keys = Object.keys(first as object);
    const d = types.declared;
    if (d !== undefined && typeof d === 'object' && !Array.isArray(d))
      for (const k of Object.keys(d))
        if (!keys.includes(k)) throw argError(names.op, `${where}${path}.${k} names no field of the sample (fields: ${keys.join(', ')})`);
    return Object.fromEntries(
      keys.map((k) => [
        k,
        collateSamples(
          items.map((it) => (it as Record<string, unknown>)[k]),
          names,
          { ...types, declared: declaredAt(names.op, types.declared, k, path, where) },
          `${path}.${k}`,
        ),
      ]),
    );
  }
  return items;
}

/** The declaration that makes the field at `path` (`.y`, `[1]`, `.a[0]`) f32, for messages. */
function declarationFor(path: string): string {
  const parts = [...path.matchAll(/\.([^.[]+)|\[(\d+)\]/g)];
  return parts.reduceRight<string>(
    (inner, m) => (m[1] !== undefined ? `{ ${m[1]}: ${inner} }` : `[${'undefined, '.repeat(Number(m[2]))}${inner}]`),
    "'f32'",
  );
}

/**
 * Numbers become a tensor of the declared dtype, else of the dtype this field took in the
 * loader's first batch, else of what the values say (all integers: i64; any fraction: f32). A
 * fraction for an integer dtype is ERR_DTYPE naming the sample: never truncated, never a new dtype.
 */
function collateNumbers(items: number[], names: SampleNames, types: DTypeSource, path: string, where: string): Tensor {
  const declared = leafDType(names.op, types.declared, path, where);
  let dtype = declared ?? types.fixed?.get(path);
  if (dtype === undefined) {
    dtype = items.every(Number.isInteger) ? 'i64' : 'f32';
    types.fixed?.set(path, dtype);
  }
  if (!isFloating(dtype)) {
    const bad = items.findIndex((v) => !Number.isInteger(v));
    if (bad >= 0) {
      const why = declared ? `declared ${dtype} in ${where}` : `${dtype} since the loader's first batch held only whole numbers there`;
      throw flockError(
        'ERR_DTYPE',
        names.op,
        `${names.name(bad)}${path} is ${items[bad]}, but the field is ${why}; declare it floating (the dataset's ` +
          `dtypes property or the DataLoader's dtypes option: { dtypes: ${declarationFor(path)} })`,
      );
    }
  }
  return tensor(items, { dtype });
}

/** PyTorch DataLoader options that flockml does not implement, and why: rejected, never ignored. */
const UNSUPPORTED: Record<string, string> = {
  numWorkers:
    'there are no worker processes: batches are gathered by queued native ops, and the next batch is prefetched while the current step runs',
  pinMemory: 'host-to-device copies are already staged through pinned buffers',
  prefetchFactor: 'exactly one batch is prefetched',
  persistentWorkers: 'there are no worker processes',
  workerInitFn: 'there are no worker processes',
  timeout: 'there are no worker processes to time out',
  generator: "use 'seed' for a reproducible shuffle",
  batchSampler: "use 'sampler' with 'batchSize'",
};
const ACCEPTED = ['batchSize', 'shuffle', 'seed', 'dropLast', 'collate', 'sampler', 'dtypes'] as const;

function isSampler(v: unknown): v is Iterable<number> & { readonly length: number } {
  return (
    typeof v === 'object' &&
    v !== null &&
    typeof (v as { length?: unknown }).length === 'number' &&
    typeof (v as { [Symbol.iterator]?: unknown })[Symbol.iterator] === 'function'
  );
}

/** Disposes the tensors of a batch nobody will see (a prefetched one after break or an error). */
function disposeBatch(b: unknown): void {
  if (b instanceof Tensor) b.dispose();
  else if (Array.isArray(b)) b.forEach(disposeBatch);
  else if (b !== null && typeof b === 'object' && Object.getPrototypeOf(b) === Object.prototype) Object.values(b).forEach(disposeBatch);
}

const ignore = (): void => undefined;

/** What {@link DataLoader.stateDict} returns. */
export interface DataLoaderState {
  epoch: number;
  batches: number;
  sampler?: unknown;
}

interface Stateful {
  stateDict(): unknown;
  loadStateDict(state: unknown): void;
}

function hasState(v: unknown): v is Stateful {
  return (
    typeof v === 'object' &&
    v !== null &&
    typeof (v as Stateful).stateDict === 'function' &&
    typeof (v as Stateful).loadStateDict === 'function'
  );
}

export class DataLoader<T = unknown, B = Collated<T>> {
  readonly batchSize: number;
  readonly shuffle: boolean;
  readonly dropLast: boolean;
  private readonly seed: number;
  private readonly collate: (items: T[]) => B;
  private readonly ownsBatches: boolean;
  private readonly sampler: (Iterable<number> & { readonly length: number }) | undefined;
  // The default collate's dtypes: declared, and those each number field took in the first batch.
  private readonly dtypeSource: DTypeSource;
  private epoch = 0;
  // Where iteration stands, for stateDict(): the epoch in progress (null between epochs), how
  // many of its batches the user has received, the sampler's state when it began, and how many
  // batches the next epoch skips (set by loadStateDict).
  private epochInProgress: number | null = null;
  private handedOut = 0;
  private samplerAtEpochStart: unknown = undefined;
  private skipNext = 0;

  /** Whether the dataset is iterable (a stream of samples, such as CsvDataset) rather than map-style. */
  private readonly iterable: boolean;

  constructor(
    readonly dataset: Dataset<T> | IterableDataset<T>,
    options: DataLoaderOptions<T, B> = {},
  ) {
    const op = 'DataLoader';
    this.iterable = isIterableDataset(dataset);
    if (
      !this.iterable &&
      (typeof dataset !== 'object' ||
        dataset === null ||
        typeof dataset.length !== 'number' ||
        typeof (dataset as Dataset).get !== 'function')
    )
      throw argError(
        op,
        `dataset must have a numeric length and a get(index) method, or be iterable (Symbol.asyncIterator or Symbol.iterator), got ${describe(dataset)}`,
      );
    if (options !== null && typeof options === 'object')
      for (const key of Object.keys(options)) {
        const camel = key.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase()); // num_workers too
        if (Object.hasOwn(UNSUPPORTED, camel)) throw argError(op, `option '${key}' is not supported (${UNSUPPORTED[camel]})`);
      }
    const o = checkOptions(op, options, ACCEPTED);
    if (o.batchSize !== undefined && typeof o.batchSize !== 'number')
      throw argError(op, `batchSize must be a number, got ${describe(o.batchSize)}`);
    this.batchSize = o.batchSize ?? 1;
    if (!Number.isInteger(this.batchSize) || this.batchSize < 1)
      throw outOfRange(op, `batchSize must be a positive integer, got ${this.batchSize}`);
    for (const key of ['shuffle', 'dropLast'] as const)
      if (o[key] !== undefined && typeof o[key] !== 'boolean') throw argError(op, `${key} must be a boolean, got ${describe(o[key])}`);
    if (o.seed !== undefined && !(typeof o.seed === 'number' && Number.isInteger(o.seed)))
      throw argError(op, `seed must be an integer, got ${describe(o.seed)}`);
    if (o.collate !== undefined && typeof o.collate !== 'function')
      throw argError(op, `collate must be a function, got ${describe(o.collate)}`);
    if (o.sampler !== undefined && !isSampler(o.sampler))
      throw argError(op, `sampler must be an iterable of indices with a numeric length, got ${describe(o.sampler)}`);
    this.shuffle = o.shuffle ?? false;
    this.dropLast = o.dropLast ?? false;
    this.seed = o.seed ?? 0;
    this.collate = o.collate ?? (defaultCollate as (items: T[]) => B);
    // Batches of the default collate are new tensors, so the loader may dispose the ones it never
    // hands out; a custom collate may return tensors the dataset still owns.
    this.ownsBatches = o.collate === undefined;
    this.sampler = o.sampler;
    if (o.dtypes !== undefined && o.collate !== undefined)
      throw argError(op, 'dtypes is for the default collate; a custom collate makes its own tensors');
    this.dtypeSource =
      o.dtypes !== undefined
        ? { declared: o.dtypes, fixed: new Map(), where: "the DataLoader's dtypes" }
        : { declared: dataset.dtypes, fixed: new Map(), where: 'dataset.dtypes' };
    if (this.sampler && this.shuffle) throw argError(op, 'shuffle and sampler are mutually exclusive (the sampler orders the samples)');
    if (this.iterable && (this.shuffle || this.sampler))
      throw argError(
        op,
        `${this.shuffle ? 'shuffle' : 'a sampler'} needs a map-style dataset; an iterable dataset yields its samples in its own order`,
      );
  }

  /** The map-style dataset (every path but iterable datasets'). */
  private get mapped(): Dataset<T> {
    return this.dataset as Dataset<T>;
  }

  /** Number of batches per epoch. */
  get length(): number {
    if (this.iterable && typeof this.dataset.length !== 'number')
      throw argError('DataLoader.length', 'an iterable dataset without a length has no known number of batches');
    const n = this.sampler ? this.sampler.length : (this.dataset.length as number);
    return this.dropLast ? Math.floor(n / this.batchSize) : Math.ceil(n / this.batchSize);
  }

  /** The sample order of the next epoch (advances the epoch counter). */
  private order(): number[] {
    if (this.sampler) {
      this.epoch++;
      return [...this.sampler];
    }
    const n = this.mapped.length;
    const idx = Array.from({ length: n }, (_, i) => i);
    if (this.shuffle) {
      const r = shuffleRng(this.seed + this.epoch);
      for (let i = n - 1; i > 0; i--) {
        const j = Math.floor(r() * (i + 1));
        [idx[i], idx[j]] = [idx[j], idx[i]];
      }
    }
    this.epoch++;
    return idx;
  }

  private *batchIndices(): Generator<number[]> {
    const skip = this.skipNext;
    this.skipNext = 0;
    this.samplerAtEpochStart = hasState(this.sampler) ? this.sampler.stateDict() : undefined;
    const idx = this.order();
    this.epochInProgress = this.epoch - 1;
    this.handedOut = skip;
    for (let i = skip; i < this.length; i++) yield idx.slice(i * this.batchSize, (i + 1) * this.batchSize);
  }

  /** Called as a batch goes to the user; the epoch ends with its last batch. */
  private handOut(): void {
    if (++this.handedOut >= this.length) this.epochInProgress = null;
  }

  /**
   * Where iteration stands, for checkpoints (`fl.checkpoint.save(dir, { sampler: loader })`): the
   * epoch in progress and how many of its batches were handed out (with the sampler's state at the
   * start of that epoch, when the sampler has one). Loading it makes the next iteration resume
   * with the first batch not yet handed out, in the same order.
   */
  stateDict(): DataLoaderState {
    if (this.epochInProgress === null) return { epoch: this.epoch, batches: 0 };
    const s: DataLoaderState = { epoch: this.epochInProgress, batches: this.handedOut };
    if (this.samplerAtEpochStart !== undefined) s.sampler = this.samplerAtEpochStart;
    return s;
  }

  /** Restores {@link stateDict}'s result; validated in full before anything changes. */
  loadStateDict(state: DataLoaderState): void {
    const op = 'DataLoader.loadStateDict';
    if (state === undefined) throw argError(op, 'expected a state object, got undefined');
    const s = checkOptions(op, state, ['epoch', 'batches', 'sampler']);
    for (const key of ['epoch', 'batches'] as const)
      if (!(typeof s[key] === 'number' && Number.isInteger(s[key]) && s[key] >= 0))
        throw argError(op, `${key} must be a non-negative integer, got ${describe(s[key])}`);
    if ((!this.iterable || typeof this.dataset.length === 'number') && s.batches > this.length)
      throw outOfRange(op, `batches ${s.batches} is more than an epoch's ${this.length}`);
    const sampler = this.sampler;
    if (s.sampler !== undefined && !hasState(sampler))
      throw argError(op, "the state has a sampler state but this loader's sampler has no loadStateDict");
    if (s.sampler !== undefined && hasState(sampler)) sampler.loadStateDict(s.sampler);
    this.epoch = s.epoch;
    this.skipNext = s.batches;
    this.epochInProgress = null;
  }

  /**
   * One batch: the samples of `indices`, collated. A sample of undefined (a get() that returned
   * nothing) is ERR_DATA naming its index; the default collate also refuses null and samples of
   * different structure, naming the indices, while a custom collate receives null as it is.
   */
  private makeBatch(indices: number[]): B | Promise<B> {
    const byDefault = this.collate === (defaultCollate as unknown);
    if (canGetBatch(this.dataset) && byDefault && this.dtypeSource.declared === undefined) return this.dataset.getBatch(indices) as B;
    const dataset = this.mapped;
    const names: SampleNames = { op: 'DataLoader', name: (i) => `dataset.get(${indices[i]})`, verb: 'returned' };
    const collate = (xs: unknown[]): B => {
      const missing = xs.indexOf(undefined);
      if (missing >= 0)
        throw flockError(
          'ERR_DATA',
          'DataLoader',
          `${names.name(missing)} returned undefined; get() must return a sample for every index below length`,
        );
      return byDefault ? (collateSamples(xs, names, this.dtypeSource) as B) : this.collate(xs as T[]);
    };
    const items = indices.map((i) => dataset.get(i));
    if (items.some((it) => it instanceof Promise)) return Promise.all(items).then(collate);
    return collate(items);
  }

  /**
   * Starts the next batch (its ops are queued now) as a promise that already has a handler, so a
   * failure waits, unreported, for the turn of the batch it belongs to; null at the end.
   */
  private prefetch(ids: Iterator<number[]>): Promise<B> | null {
    const n = ids.next();
    if (n.done) return null;
    let p: Promise<B>;
    try {
      p = Promise.resolve(this.makeBatch(n.value));
    } catch (e) {
      p = Promise.reject(e);
    }
    p.catch(ignore);
    return p;
  }

  /** A prefetched batch that will never be handed out: its tensors are freed, its error dropped. */
  private discard(p: Promise<B>): void {
    p.then((b) => {
      if (this.ownsBatches) disposeBatch(b);
    }, ignore);
  }

  /**
   * The batches of an iterable dataset: consecutive samples, batchSize at a time (the last one
   * shorter unless dropLast). A resumed epoch reads and drops the batches already handed out.
   * `isAsync` says whether `it` is an AsyncIterator (its results are awaited).
   */
  private streamBatches(it: Iterator<T>): Generator<B>;
  private streamBatches(it: AsyncIterator<T> | Iterator<T>, isAsync: true): AsyncGenerator<B>;
  private streamBatches(it: AsyncIterator<T> | Iterator<T>, isAsync = false): Generator<B> | AsyncGenerator<B> {
    const skip = this.skipNext;
    this.skipNext = 0;
    this.epochInProgress = this.epoch++;
    this.handedOut = skip;
    const size = this.batchSize;
    let seen = 0; // samples read so far this epoch
    let batches = 0; // batches made (handed out or skipped)
    const collate = (xs: T[]): B | null => {
      const first = seen - xs.length;
      if (batches++ < skip) return null;
      const names: SampleNames = { op: 'DataLoader', name: (i) => `dataset sample ${first + i}`, verb: 'returned' };
      const b = this.collate === (defaultCollate as unknown) ? (collateSamples(xs, names, this.dtypeSource) as B) : this.collate(xs);
      this.handedOut++;
      return b;
    };
    const self = this;
    // One batcher for both iterator kinds: `add` takes a sample and returns a full batch (or null),
    // `rest` the last, partial batch unless dropLast (or null).
    let buf: T[] = [];
    const add = (v: T): B | null => {
      buf.push(v);
      seen++;
      if (buf.length < size) return null;
      const b = collate(buf);
      buf = [];
      return b;
    };
    const rest = (): B | null => (buf.length > 0 && !self.dropLast ? collate(buf) : null);
    if (!isAsync) {
      const sync = it as Iterator<T>;
      return (function* () {
        try {
          for (let r = sync.next(); !r.done; r = sync.next()) {
            const b = add(r.value);
            if (b !== null) yield b;
          }
          const b = rest();
          if (b !== null) yield b;
          self.epochInProgress = null;
        } finally {
          sync.return?.();
        }
      })();
    }
    const source = it as AsyncIterator<T>;
    return (async function* () {
      try {
        for (let r = await source.next(); !r.done; r = await source.next()) {
          const b = add(r.value);
          if (b !== null) yield b;
        }
        const b = rest();
        if (b !== null) yield b;
        self.epochInProgress = null;
      } finally {
        await source.return?.();
      }
    })();
  }

  /** Synchronous iteration (datasets whose get() is synchronous, iterable datasets with a synchronous iterator). */
  *[Symbol.iterator](): Iterator<B> {
    if (this.iterable) {
      const ds = this.dataset as IterableDataset<T>;
      if (typeof (ds as Iterable<T>)[Symbol.iterator] !== 'function') throw argError('DataLoader', 'the dataset is async; use for await');
      yield* this.streamBatches((ds as Iterable<T>)[Symbol.iterator]()) as Generator<B>;
      return;
    }
    for (const ids of this.batchIndices()) {
      const b = this.makeBatch(ids);
      if (b instanceof Promise) {
        b.catch(ignore);
        throw argError('DataLoader', 'the dataset is async; use for await');
      }
      this.handOut();
      yield b;
    }
  }

  /**
   * Asynchronous iteration with one batch prefetched ahead. Each batch is handed out once the
   * device queues are below their low watermark and on a new event-loop turn ({@link ready}), so
   * timers, I/O and finalizers run between steps. An error of a batch (thrown or rejected by the
   * dataset) arrives with that batch; `break` disposes the prefetched one.
   */
  async *[Symbol.asyncIterator](): AsyncIterator<B> {
    if (this.iterable) {
      const ds = this.dataset as IterableDataset<T>;
      const asyncIt = (ds as AsyncIterable<T>)[Symbol.asyncIterator];
      const it = typeof asyncIt === 'function' ? asyncIt.call(ds) : (ds as Iterable<T>)[Symbol.iterator]();
      for await (const b of this.streamBatches(it, true)) {
        await ready();
        yield b as B;
      }
      return;
    }
    const ids = this.batchIndices();
    let pending = this.prefetch(ids);
    try {
      while (pending !== null) {
        const current = pending;
        pending = null;
        const batch = await current;
        await ready();
        pending = this.prefetch(ids);
        this.handOut();
        yield batch;
      }
    } finally {
      if (pending !== null) this.discard(pending);
    }
  }
}
