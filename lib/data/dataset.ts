/** Datasets: anything with a length and an indexed get; TensorDataset slices tensors by row. */
import { Tensor } from '../tensor';
import { tensor } from '../ops/creation';
import { argError, describe, flockError } from '../errors';
import type { DType } from '../dtype';

/**
 * Declared dtypes of a sample's fields, shaped like the sample: a dtype for a number or tensor
 * field (or for every field under an array or object), an array for an array sample, an object
 * for an object sample, undefined where the dataset decides. `{ y: 'f32' }` makes a regression
 * target f32 even in a batch of whole numbers; `[undefined, 'i64']` types the label of `[x, y]`.
 */
export type SampleDTypes = DType | undefined | readonly SampleDTypes[] | { readonly [field: string]: SampleDTypes };

export interface Dataset<T = unknown> {
  readonly length: number;
  /**
   * The dtypes of the sample's fields, where values alone cannot tell (a float target whose values
   * are whole numbers): the default collate uses them for every batch.
   */
  readonly dtypes?: SampleDTypes;
  /** The sample at `index` in [0, length); never undefined (the DataLoader refuses that with ERR_DATA naming the index). */
  get(index: number): T | Promise<T>;
}

/**
 * A stream of samples (torch.utils.data.IterableDataset): an async or sync iterable, read in order
 * by the DataLoader, which batches consecutive samples. Each iteration is one epoch.
 */
export type IterableDataset<T = unknown> = (AsyncIterable<T> | Iterable<T>) & {
  /** The number of samples, if known. */
  readonly length?: number;
  readonly dtypes?: SampleDTypes;
};

/** Whether `d` is an iterable dataset: iterable, with no get(index) (a map-style dataset wins if it is both). */
export function isIterableDataset(d: unknown): d is IterableDataset {
  if (typeof d !== 'object' || d === null || typeof (d as { get?: unknown }).get === 'function') return false;
  return (
    typeof (d as AsyncIterable<unknown>)[Symbol.asyncIterator] === 'function' ||
    typeof (d as Iterable<unknown>)[Symbol.iterator] === 'function'
  );
}

/** Rows of several tensors sharing dim 0; batches are gathered in one indexSelect per tensor. */
export class TensorDataset implements Dataset<Tensor[]> {
  readonly tensors: Tensor[];

  constructor(...tensors: Tensor[]) {
    if (!tensors.length) throw argError('TensorDataset', 'expected at least one tensor');
    for (const t of tensors) {
      if (!(t instanceof Tensor)) throw argError('TensorDataset', `arguments must be tensors, got ${describe(t)}`);
      if (t.ndim === 0 || t.shape[0] !== tensors[0].shape[0])
        throw flockError('ERR_SHAPE', 'TensorDataset', `tensors must share dim 0, got [${tensors.map((x) => `[${x.shape}]`).join(', ')}]`);
    }
    this.tensors = tensors;
  }

  get length(): number {
    return this.tensors[0].shape[0];
  }

  get(index: number): Tensor[] {
    if (!Number.isInteger(index) || index < 0 || index >= this.length)
      throw flockError(
        Number.isInteger(index) ? 'ERR_INDEX' : 'ERR_ARG',
        'TensorDataset.get',
        `index ${describe(index)} is out of range for ${this.length} rows`,
      );
    return this.tensors.map((t) => t.narrow(0, index, 1).squeeze(0));
  }

  /** Many rows at once (used by DataLoader): one gather per tensor instead of one op per row. */
  getBatch(indices: number[]): Tensor[] {
    const idx = tensor(Int32Array.from(indices));
    const out = this.tensors.map((t) => t.indexSelect(0, t.device === 'cpu' ? idx : idx.to(t.device)));
    idx.dispose(); // queued gathers hold their own reference
    return out;
  }
}
