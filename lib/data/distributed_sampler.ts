/**
 * DistributedSampler: each rank's share of a dataset's indices. Rank r takes every size-th index
 * starting at r; the list is padded (by repeating from the start) so every rank gets the same
 * count and takes the same number of steps, or trimmed with dropLast. With shuffle, the order
 * is a seeded permutation that changes with setEpoch() and is identical on every rank.
 */
import { distError } from '../distributed/errors';
import { getRank, getWorldSize, isInitialized } from '../distributed/process_group';

export interface DistributedSamplerOptions {
  numReplicas?: number;
  rank?: number;
  shuffle?: boolean;
  seed?: number;
  dropLast?: boolean;
}

// mulberry32: tiny, fast, and the same on every platform (Math.random is not seedable).
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export class DistributedSampler implements Iterable<number> {
  readonly length: number;
  readonly numReplicas: number;
  readonly rank: number;
  readonly shuffle: boolean;
  readonly seed: number;
  readonly dropLast: boolean;
  #epoch = 0;
  #datasetLength: number;

  constructor(dataset: number | { length: number }, options: DistributedSamplerOptions = {}) {
    const n = typeof dataset === 'number' ? dataset : dataset?.length;
    if (!Number.isInteger(n) || n < 0) throw new TypeError(`DistributedSampler: dataset length must be a non-negative integer, got ${n}`);
    this.#datasetLength = n;
    const init = isInitialized();
    this.numReplicas = options.numReplicas ?? (init ? getWorldSize() : 1);
    this.rank = options.rank ?? (init ? getRank() : 0);
    if (!Number.isInteger(this.numReplicas) || this.numReplicas < 1 || !Number.isInteger(this.rank) || this.rank < 0 || this.rank >= this.numReplicas)
      throw distError('ERR_ARG', `DistributedSampler: rank ${this.rank} is outside numReplicas ${this.numReplicas}`);
    this.shuffle = options.shuffle ?? true;
    this.seed = options.seed ?? 0;
    this.dropLast = options.dropLast ?? false;
    this.length = this.dropLast ? Math.floor(n / this.numReplicas) : Math.ceil(n / this.numReplicas);
  }

  /** Changes the shuffle for the next pass; call it with the epoch number before each epoch. */
  setEpoch(epoch: number): void {
    this.#epoch = epoch;
  }

  /** This rank's indices for the current epoch. */
  indices(): number[] {
    const n = this.#datasetLength;
    const order = Array.from({ length: n }, (_, i) => i);
    if (this.shuffle) {
      const rand = rng((this.seed + this.#epoch * 0x9e3779b1) >>> 0);
      for (let i = n - 1; i > 0; i--) {
        const j = Math.floor(rand() * (i + 1));
        [order[i], order[j]] = [order[j], order[i]];
      }
    }
    const total = this.length * this.numReplicas;
    if (total <= n) order.length = total;
    else for (let k = 0; n > 0 && order.length < total; k++) order.push(order[k % n]);
    const out: number[] = [];
    for (let i = this.rank; i < order.length; i += this.numReplicas) out.push(order[i]);
    return out;
  }

  [Symbol.iterator](): Iterator<number> {
    return this.indices()[Symbol.iterator]();
  }
}
