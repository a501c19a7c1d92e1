/**
 * DistributedSampler: each rank's share of a dataset's indices. Rank r takes every size-th index
 * starting at r; the list is padded (by repeating from the start) so every rank gets the same
 * count and takes the same number of steps, or trimmed with dropLast. With shuffle, the order
 * is a seeded permutation that changes with setEpoch() and is identical on every rank.
 */
import { argError, checkOptions, describe, flockError } from '../errors';
import { checkBool, checkInt, checkNumber } from '../validate';
import { getRank, getWorldSize, isInitialized } from '../distributed/process_group';

export interface DistributedSamplerOptions {
  numReplicas?: number;
  rank?: number;
  shuffle?: boolean;
  seed?: number;
  dropLast?: boolean;
}

/** mulberry32: a seeded generator in [0, 1), tiny, fast and the same on every platform (Math.random is not seedable). */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** What {@link DistributedSampler.stateDict} returns: the pass it is in and how far it got, plus its settings. */
export interface DistributedSamplerState {
  epoch: number;
  /** This rank's indices of the epoch already handed out. */
  position: number;
  numReplicas: number;
  seed: number;
  shuffle: boolean;
  dropLast: boolean;
  datasetLength: number;
}

export class DistributedSampler implements Iterable<number> {
  readonly numReplicas: number;
  readonly rank: number;
  readonly shuffle: boolean;
  readonly seed: number;
  readonly dropLast: boolean;
  #epoch = 0;
  #datasetLength: number;
  #epochLength: number;
  // Where the next pass starts (set by loadStateDict) and how far the current one got.
  #start = 0;
  #position = 0;

  constructor(dataset: number | { length: number }, options?: DistributedSamplerOptions) {
    const op = 'DistributedSampler';
    if (typeof dataset !== 'number' && (typeof dataset !== 'object' || dataset === null || typeof dataset.length !== 'number'))
      throw argError(op, `dataset must be a length or have a numeric length, got ${describe(dataset)}`);
    const n = checkInt(op, 'dataset length', typeof dataset === 'number' ? dataset : dataset.length);
    this.#datasetLength = n;
    const o = checkOptions(op, options, ['numReplicas', 'rank', 'shuffle', 'seed', 'dropLast']);
    const init = isInitialized();
    this.numReplicas = o.numReplicas === undefined ? (init ? getWorldSize() : 1) : checkInt(op, 'numReplicas', o.numReplicas, 1);
    this.rank = o.rank === undefined ? (init ? getRank() : 0) : checkInt(op, 'rank', o.rank);
    if (this.rank >= this.numReplicas) throw argError(op, `rank ${this.rank} is outside numReplicas ${this.numReplicas}`);
    this.shuffle = o.shuffle === undefined ? true : checkBool(op, 'shuffle', o.shuffle);
    this.seed = o.seed === undefined ? 0 : checkNumber(op, 'seed', o.seed, { integer: true });
    this.dropLast = o.dropLast === undefined ? false : checkBool(op, 'dropLast', o.dropLast);
    this.#epochLength = this.dropLast ? Math.floor(n / this.numReplicas) : Math.ceil(n / this.numReplicas);
  }

  /** How many indices the next pass yields: the epoch's share, less what a resumed epoch already handed out. */
  get length(): number {
    return this.#epochLength - this.#start;
  }

  get epoch(): number {
    return this.#epoch;
  }

  /** This rank's indices of the current epoch handed out so far (by the iterator, counted as they are taken). */
  get position(): number {
    return this.#position;
  }

  /** Changes the shuffle for the next pass; call it with the epoch number before each epoch. */
  setEpoch(epoch: number): void {
    this.#epoch = checkInt('DistributedSampler.setEpoch', 'epoch', epoch);
    this.#start = 0;
    this.#position = 0;
  }

  /**
   * The epoch and the position within it, for an exact resume. The position counts indices as the
   * iterator hands them out, so it is exact for a loop that pulls indices as it trains; a consumer
   * that takes a whole pass up front must record its own position instead.
   */
  stateDict(): DistributedSamplerState {
    return {
      epoch: this.#epoch,
      position: this.#position,
      numReplicas: this.numReplicas,
      seed: this.seed,
      shuffle: this.shuffle,
      dropLast: this.dropLast,
      datasetLength: this.#datasetLength,
    };
  }

  /**
   * Continues from a saved state: the next pass is epoch `state.epoch` from `state.position` on.
   * The order must be the one saved (same seed, shuffle, dropLast and dataset length); on a
   * different number of replicas the position is rescaled to the same share of the epoch.
   */
  loadStateDict(state: DistributedSamplerState): void {
    const op = 'DistributedSampler.loadStateDict';
    if (!state || typeof state !== 'object') throw flockError('ERR_STATE_DICT', op, 'expected a state object');
    if (!Number.isSafeInteger(state.epoch) || state.epoch < 0 || !Number.isSafeInteger(state.position) || state.position < 0)
      throw flockError(
        'ERR_STATE_DICT',
        op,
        `epoch and position must be non-negative integers, got ${describe(state.epoch)} and ${describe(state.position)}`,
      );
    for (const k of ['seed', 'shuffle', 'dropLast', 'datasetLength'] as const) {
      const mine = k === 'datasetLength' ? this.#datasetLength : this[k];
      if (state[k] !== mine)
        throw flockError('ERR_STATE_DICT', op, `the state was saved with ${k} ${describe(state[k])}, this sampler has ${mine}`);
    }
    const position =
      state.numReplicas === this.numReplicas ? state.position : Math.floor((state.position * state.numReplicas) / this.numReplicas);
    if (position > this.#epochLength)
      throw flockError('ERR_STATE_DICT', op, `position ${position} is past the epoch's ${this.#epochLength} indices`);
    this.#epoch = state.epoch;
    this.#start = position;
    this.#position = position;
  }

  /** This rank's indices for the current epoch. */
  indices(): number[] {
    const n = this.#datasetLength;
    const order = Array.from({ length: n }, (_, i) => i);
    if (this.shuffle) {
      const rand = mulberry32((this.seed + this.#epoch * 0x9e3779b1) >>> 0);
      for (let i = n - 1; i > 0; i--) {
        const j = Math.floor(rand() * (i + 1));
        [order[i], order[j]] = [order[j], order[i]];
      }
    }
    const total = this.#epochLength * this.numReplicas;
    if (total <= n) order.length = total;
    else for (let k = 0; n > 0 && order.length < total; k++) order.push(order[k % n]);
    const out: number[] = [];
    for (let i = this.rank; i < order.length; i += this.numReplicas) out.push(order[i]);
    return out;
  }

  /** This rank's indices of the current epoch, from the resume point on (see loadStateDict). */
  *[Symbol.iterator](): Iterator<number> {
    const order = this.indices();
    const start = this.#start;
    this.#start = 0; // a resumed epoch resumes once; the next pass is whole
    this.#position = start;
    for (let i = start; i < order.length; i++) {
      this.#position = i + 1;
      yield order[i];
    }
  }
}
