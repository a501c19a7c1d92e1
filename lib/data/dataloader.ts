/**
 * DataLoader: batches of a Dataset with a seeded shuffle (a new permutation per epoch), dropLast
 * and a collate function. Async iteration prefetches: the next batch's ops are queued before the
 * current one is handed out, so gathering overlaps the training step.
 */
import { Tensor } from '../tensor';
import { stack } from '../ops/shape';
import { tensor } from '../ops/creation';
import { TensorDataset, type Dataset } from './dataset';
import { errorOf } from '../errors';

export interface DataLoaderOptions<T, B> {
  batchSize?: number;
  shuffle?: boolean;
  /** Seed of the shuffle; epoch k uses seed + k. */
  seed?: number;
  dropLast?: boolean;
  collate?: (items: T[]) => B;
  /** Where the sample indices come from, e.g. a DistributedSampler; replaces shuffle. */
  sampler?: Iterable<number> & { readonly length: number };
}

/** What defaultCollate makes of a batch of samples of type T (a TensorDataset's batch: Tensor[]). */
export type Collated<T> = T extends Tensor | number ? Tensor
  : T extends readonly unknown[] ? { -readonly [K in keyof T]: Collated<T[K]> }
  : T extends object ? { [K in keyof T]: Collated<T[K]> }
  : T[];

/** Stacks tensors, recurses into arrays and objects, and turns numbers into a tensor. */
export function defaultCollate(items: unknown[]): unknown {
  const first = items[0];
  if (first instanceof Tensor) return stack(items as Tensor[]);
  if (typeof first === 'number') return tensor(items as number[]);
  if (Array.isArray(first)) return first.map((_, i) => defaultCollate(items.map((it) => (it as unknown[])[i])));
  if (first && typeof first === 'object')
    return Object.fromEntries(Object.keys(first).map((k) => [k, defaultCollate(items.map((it) => (it as Record<string, unknown>)[k]))]));
  return items;
}

/** splitmix32: a small, well-mixed generator for the shuffle (independent of the tensor RNG). */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x9e3779b9) >>> 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return ((z ^ (z >>> 16)) >>> 0) / 2 ** 32;
  };
}

export class DataLoader<T = unknown, B = Collated<T>> {
  readonly batchSize: number;
  readonly shuffle: boolean;
  readonly dropLast: boolean;
  private readonly seed: number;
  private readonly collate: (items: T[]) => B;
  private readonly sampler: (Iterable<number> & { readonly length: number }) | undefined;
  private epoch = 0;

  constructor(readonly dataset: Dataset<T>, options: DataLoaderOptions<T, B> = {}) {
    this.batchSize = options.batchSize ?? 1;
    if (!Number.isInteger(this.batchSize) || this.batchSize < 1)
      throw errorOf('ERR_RANGE', `DataLoader: batchSize must be a positive integer, got ${options.batchSize}`);
    this.shuffle = options.shuffle ?? false;
    this.dropLast = options.dropLast ?? false;
    this.seed = options.seed ?? 0;
    this.collate = options.collate ?? (defaultCollate as (items: T[]) => B);
    this.sampler = options.sampler;
    if (this.sampler && this.shuffle)
      throw Object.assign(new TypeError('DataLoader: shuffle and sampler are mutually exclusive (the sampler orders the samples)'), { code: 'ERR_ARG' });
  }

  /** Number of batches per epoch. */
  get length(): number {
    const n = this.sampler ? this.sampler.length : this.dataset.length;
    return this.dropLast ? Math.floor(n / this.batchSize) : Math.ceil(n / this.batchSize);
  }

  /** The sample order of the next epoch (advances the epoch counter). */
  private order(): number[] {
    if (this.sampler) return [...this.sampler];
    const n = this.dataset.length;
    const idx = Array.from({ length: n }, (_, i) => i);
    if (this.shuffle) {
      const r = rng(this.seed + this.epoch);
      for (let i = n - 1; i > 0; i--) {
        const j = Math.floor(r() * (i + 1));
        [idx[i], idx[j]] = [idx[j], idx[i]];
      }
    }
    this.epoch++;
    return idx;
  }

  private *batchIndices(): Generator<number[]> {
    const idx = this.order();
    for (let i = 0; i < this.length; i++) yield idx.slice(i * this.batchSize, (i + 1) * this.batchSize);
  }

  private makeBatch(indices: number[]): B | Promise<B> {
    if (this.dataset instanceof TensorDataset && this.collate === (defaultCollate as unknown)) return this.dataset.getBatch(indices) as B;
    const items = indices.map((i) => this.dataset.get(i));
    if (items.some((it) => it instanceof Promise)) return Promise.all(items).then((xs) => this.collate(xs));
    return this.collate(items as T[]);
  }

  /** Synchronous iteration (datasets whose get() is synchronous). */
  *[Symbol.iterator](): Iterator<B> {
    for (const ids of this.batchIndices()) {
      const b = this.makeBatch(ids);
      if (b instanceof Promise) throw Object.assign(new TypeError('DataLoader: the dataset is async; use for await'), { code: 'ERR_ARG' });
      yield b;
    }
  }

  /** Asynchronous iteration with one batch prefetched ahead. */
  async *[Symbol.asyncIterator](): AsyncIterator<B> {
    const it = this.batchIndices();
    let next = it.next();
    let pending = next.done ? null : this.makeBatch(next.value);
    while (pending !== null) {
      const current = pending;
      next = it.next();
      pending = next.done ? null : this.makeBatch(next.value);
      yield await current;
    }
  }
}
