/**
 * Views of map-style datasets, as torch.utils.data: Subset (some indices of a dataset),
 * ConcatDataset (datasets one after another) and randomSplit (a seeded random partition into
 * Subsets, lengths or fractions with PyTorch 1.13's remainder rule).
 */
import type { Tensor } from '../tensor';
import { type Dataset, type SampleDTypes, TensorDataset } from './dataset';
import { argError, checkOptions, describe, flockError, outOfRange } from '../errors';
import { nextDraw } from '../random';
import { shuffleRng } from './shuffle';
import { cat } from '../ops/shape';

function checkDataset(op: string, name: string, d: unknown): Dataset {
  if (typeof d !== 'object' || d === null || typeof (d as Dataset).length !== 'number' || typeof (d as Dataset).get !== 'function')
    throw argError(op, `${name} must be a map-style dataset (a numeric length and get(index)), got ${describe(d)}`);
  return d as Dataset;
}

function checkIndex(op: string, index: number, length: number): void {
  if (!Number.isInteger(index) || index < 0 || index >= length)
    throw flockError(
      Number.isInteger(index) ? 'ERR_INDEX' : 'ERR_ARG',
      op,
      `index ${describe(index)} is out of range for ${length} samples`,
    );
}

/** Datasets whose rows can be gathered many at a time (DataLoader's fast path with the default collate). */
export interface BatchGatherable {
  getBatch(indices: number[]): Tensor[];
}

/** Whether `d` gathers batches natively: a TensorDataset, or a Subset/ConcatDataset made only of them. */
export function canGetBatch(d: unknown): d is BatchGatherable {
  if (d instanceof TensorDataset) return true;
  if (d instanceof Subset) return canGetBatch(d.dataset);
  if (d instanceof ConcatDataset)
    return d.datasets.every(
      (x) => canGetBatch(x) && (x as Dataset).dtypes === undefined && sameTensorLayout(x as Dataset, d.datasets[0] as Dataset),
    );
  return false;
}

/** TensorDatasets that can be concatenated row-wise: as many tensors, of the same dtypes and row shapes. */
function sameTensorLayout(a: Dataset, b: Dataset): boolean {
  const ta = tensorsOf(a);
  const tb = tensorsOf(b);
  return (
    ta !== null &&
    tb !== null &&
    ta.length === tb.length &&
    ta.every(
      (t, i) =>
        t.dtype === tb[i].dtype &&
        t.device === tb[i].device &&
        t.ndim === tb[i].ndim &&
        t.shape.every((s, k) => k === 0 || s === tb[i].shape[k]),
    )
  );
}

function tensorsOf(d: Dataset): Tensor[] | null {
  if (d instanceof TensorDataset) return d.tensors;
  if (d instanceof Subset) return tensorsOf(d.dataset);
  if (d instanceof ConcatDataset) return tensorsOf(d.datasets[0]);
  return null;
}

/** The samples of `dataset` at `indices`, in that order, as torch.utils.data.Subset. */
export class Subset<T = unknown> implements Dataset<T> {
  readonly dataset: Dataset<T>;
  readonly indices: readonly number[];

  constructor(dataset: Dataset<T>, indices: Iterable<number>) {
    const op = 'Subset';
    this.dataset = checkDataset(op, 'dataset', dataset) as Dataset<T>;
    if (indices === null || typeof indices !== 'object' || typeof (indices as Iterable<number>)[Symbol.iterator] !== 'function')
      throw argError(op, `indices must be an iterable of sample indices, got ${describe(indices)}`);
    const list = Array.from(indices);
    list.forEach((i, k) => {
      if (!Number.isInteger(i) || i < 0 || i >= dataset.length)
        throw flockError(
          Number.isInteger(i) ? 'ERR_INDEX' : 'ERR_ARG',
          op,
          `indices[${k}] = ${describe(i)} is out of range for ${dataset.length} samples`,
        );
    });
    this.indices = Object.freeze(list);
  }

  get length(): number {
    return this.indices.length;
  }

  /** The underlying dataset's declared dtypes. */
  get dtypes(): SampleDTypes {
    return this.dataset.dtypes;
  }

  get(index: number): T | Promise<T> {
    checkIndex('Subset.get', index, this.indices.length);
    return this.dataset.get(this.indices[index]);
  }

  /** Many rows at once, when the underlying dataset gathers batches (a TensorDataset). */
  getBatch(indices: number[]): Tensor[] {
    if (!canGetBatch(this.dataset)) throw argError('Subset.getBatch', 'the underlying dataset has no getBatch');
    indices.forEach((i) => checkIndex('Subset.getBatch', i, this.indices.length));
    return this.dataset.getBatch(indices.map((i) => this.indices[i]));
  }
}

/** Several datasets one after another, as torch.utils.data.ConcatDataset. */
export class ConcatDataset<T = unknown> implements Dataset<T> {
  readonly datasets: readonly Dataset<T>[];
  /** The running total of the datasets' lengths (PyTorch's cumulative_sizes). */
  readonly cumulativeSizes: readonly number[];

  constructor(datasets: Iterable<Dataset<T>>) {
    const op = 'ConcatDataset';
    if (datasets === null || typeof datasets !== 'object' || typeof (datasets as Iterable<unknown>)[Symbol.iterator] !== 'function')
      throw argError(op, `datasets must be an iterable of datasets, got ${describe(datasets)}`);
    const list = Array.from(datasets);
    if (list.length === 0) throw argError(op, 'datasets should not be an empty iterable');
    list.forEach((d, i) => checkDataset(op, `datasets[${i}]`, d));
    this.datasets = Object.freeze(list);
    let total = 0;
    this.cumulativeSizes = Object.freeze(list.map((d) => (total += d.length)));
  }

  get length(): number {
    return this.cumulativeSizes[this.cumulativeSizes.length - 1];
  }

  /** The first dataset's declared dtypes (the parts are meant to hold samples of one kind). */
  get dtypes(): SampleDTypes {
    return this.datasets[0].dtypes;
  }

  /** Which dataset holds sample `index`, and where in it. */
  private locate(index: number): [number, number] {
    let lo = 0;
    let hi = this.cumulativeSizes.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.cumulativeSizes[mid] > index) hi = mid;
      else lo = mid + 1;
    }
    return [lo, lo === 0 ? index : index - this.cumulativeSizes[lo - 1]];
  }

  get(index: number): T | Promise<T> {
    checkIndex('ConcatDataset.get', index, this.length);
    const [d, i] = this.locate(index);
    return this.datasets[d].get(i);
  }

  /** Many rows at once, when every part is a TensorDataset of one layout: one gather per part, then a cat. */
  getBatch(indices: number[]): Tensor[] {
    if (!canGetBatch(this)) throw argError('ConcatDataset.getBatch', 'the datasets are not all TensorDatasets of one layout');
    indices.forEach((i) => checkIndex('ConcatDataset.getBatch', i, this.length));
    // Runs of consecutive indices in the same part are gathered together, keeping the batch's order.
    const pieces: Tensor[][] = [];
    let k = 0;
    while (k < indices.length) {
      const [d] = this.locate(indices[k]);
      const run: number[] = [];
      while (k < indices.length && this.locate(indices[k])[0] === d) run.push(this.locate(indices[k++])[1]);
      pieces.push((this.datasets[d] as unknown as BatchGatherable).getBatch(run));
    }
    if (pieces.length === 1) return pieces[0];
    return pieces[0].map((_, t) => {
      const parts = pieces.map((p) => p[t]);
      const out = cat(parts, 0);
      for (const p of parts) p.dispose();
      return out;
    });
  }
}

/** Math.isclose(a, b) with Python's default relative tolerance. */
const isClose = (a: number, b: number) => Math.abs(a - b) <= 1e-9 * Math.max(Math.abs(a), Math.abs(b));

/**
 * The split sizes for `n` samples, as torch.utils.data.random_split (1.13): fractions (summing to
 * 1, within rounding, and not above it) give floor(n · f) each, and the remainder is handed out
 * one by one, round robin from the first split; otherwise the lengths are taken as they are and
 * must sum to n.
 */
function splitLengths(n: number, lengths: readonly number[], op = 'randomSplit'): number[] {
  if (!Array.isArray(lengths) || lengths.length === 0)
    throw argError(op, `lengths must be a non-empty array of lengths or fractions, got ${describe(lengths)}`);
  lengths.forEach((l, i) => {
    if (typeof l !== 'number' || !Number.isFinite(l)) throw argError(op, `lengths[${i}] must be a number, got ${describe(l)}`);
  });
  const sum = lengths.reduce((a, b) => a + b, 0);
  let sizes: number[];
  if (isClose(sum, 1) && sum <= 1) {
    sizes = lengths.map((f, i) => {
      if (f < 0 || f > 1) throw outOfRange(op, `the fraction at index ${i} is not between 0 and 1: ${f}`);
      return Math.floor(n * f);
    });
    const remainder = n - sizes.reduce((a, b) => a + b, 0);
    for (let i = 0; i < remainder; i++) sizes[i % sizes.length]++;
  } else {
    lengths.forEach((l, i) => {
      if (!Number.isInteger(l) || l < 0)
        throw outOfRange(op, `lengths[${i}] = ${l}: give non-negative integer lengths, or fractions that sum to 1`);
    });
    sizes = [...lengths];
  }
  const total = sizes.reduce((a, b) => a + b, 0);
  if (total !== n) throw outOfRange(op, `the lengths sum to ${total}, but the dataset has ${n} samples`);
  return sizes;
}

export interface RandomSplitOptions {
  /** Seed of the permutation; without it one is drawn from the global generator (fl.manualSeed). */
  seed?: number;
}

/**
 * Splits a dataset into non-overlapping Subsets of the given lengths (or fractions), in a random
 * order, as torch.utils.data.random_split: `const [train, val] = fl.data.randomSplit(ds, [0.8, 0.2], { seed: 42 })`.
 * The same seed gives the same split; the permutation is not PyTorch's (its generator is not ours).
 */
export function randomSplit<T>(dataset: Dataset<T>, lengths: readonly number[], options: RandomSplitOptions = {}): Subset<T>[] {
  const op = 'randomSplit';
  checkDataset(op, 'dataset', dataset);
  if (options !== null && typeof options === 'object' && 'generator' in options)
    throw argError(op, "option 'generator' is not supported (flockml has no Generator objects): pass { seed } for a reproducible split");
  const o = checkOptions(op, options, ['seed']);
  if (o.seed !== undefined && !(Number.isSafeInteger(o.seed) && o.seed >= 0))
    throw argError(op, `seed must be a non-negative integer, got ${describe(o.seed)}`);
  const sizes = splitLengths(dataset.length, lengths, op);
  const n = dataset.length;
  // Without a seed the global generator supplies one, so fl.manualSeed makes the split reproducible.
  const seed =
    o.seed ??
    (() => {
      const d = nextDraw(4);
      return (Math.imul((d.seed >>> 0) ^ Math.floor(d.seed / 2 ** 32), 0x9e3779b1) ^ d.offset) >>> 0;
    })();
  const r = shuffleRng(seed);
  const perm = Array.from({ length: n }, (_, i) => i);
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(r() * (i + 1));
    [perm[i], perm[j]] = [perm[j], perm[i]];
  }
  let at = 0;
  return sizes.map((len) => new Subset(dataset, perm.slice(at, (at += len))));
}
