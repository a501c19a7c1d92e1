/** Datasets: anything with a length and an indexed get; TensorDataset slices tensors by row. */
import { Tensor } from '../tensor';
import { tensor } from '../ops/creation';
import { argError, describe, flockError } from '../errors';

export interface Dataset<T = unknown> {
  readonly length: number;
  /** The sample at `index` in [0, length); never undefined (the DataLoader refuses that with ERR_DATA naming the index). */
  get(index: number): T | Promise<T>;
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
