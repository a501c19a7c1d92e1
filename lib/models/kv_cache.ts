/**
 * The key/value cache of autoregressive decoding: one preallocated pair of buffers per layer, sized
 * for the whole generation (prompt + new tokens), so a step writes its keys and values in place and
 * attends over the filled prefix instead of recomputing the context.
 *
 * Buffers are laid out [maxLength, batch, kvHeads, headDim]: a write at the current length is then a
 * narrow along dim 0, which flockml's in-place copy writes through (narrows along other dims are
 * copies); attention reads the prefix back as [batch, kvHeads, length, headDim] through a permute.
 */
import type { Tensor } from '../tensor';
import { zeros } from '../ops/creation';
import { keep } from '../memory';
import { noGrad } from '../dispatch/grad_mode';
import type { DType } from '../dtype';
import { argError, checkOptions, flockError, shapeError } from '../errors';
import { checkInt, checkTensorArg } from '../validate';
import { shapeStr } from '../ops/util';

export interface KVCacheShape {
  layers: number;
  batch: number;
  kvHeads: number;
  headDim: number;
  /** Positions the cache holds: prompt length + new tokens. */
  maxLength: number;
  dtype: DType;
  device: string;
}

export class KVCache {
  readonly #keys: Tensor[] = [];
  readonly #values: Tensor[] = [];
  #length = 0;
  readonly maxLength: number;
  readonly batch: number;

  constructor(shape: KVCacheShape) {
    const op = 'KVCache';
    checkOptions(op, shape, ['layers', 'batch', 'kvHeads', 'headDim', 'maxLength', 'dtype', 'device']);
    if (shape === undefined || shape === null) throw argError(op, 'expected { layers, batch, kvHeads, headDim, maxLength, dtype, device }');
    const layers = checkInt(op, 'layers', shape.layers);
    this.batch = checkInt(op, 'batch', shape.batch, 1);
    this.maxLength = checkInt(op, 'maxLength', shape.maxLength, 1);
    const dims = [this.maxLength, this.batch, checkInt(op, 'kvHeads', shape.kvHeads, 1), checkInt(op, 'headDim', shape.headDim, 1)];
    for (let l = 0; l < layers; l++) {
      this.#keys.push(keep(zeros(dims, { dtype: shape.dtype, device: shape.device })));
      this.#values.push(keep(zeros(dims, { dtype: shape.dtype, device: shape.device })));
    }
  }

  /** Positions filled so far (all layers advance together, by {@link advance}). */
  get length(): number {
    return this.#length;
  }

  /**
   * Writes layer `layer`'s new keys and values [batch, kvHeads, t, headDim] after the filled prefix
   * and returns the prefix with them, [batch, kvHeads, length + t, headDim] each.
   */
  update(layer: number, k: Tensor, v: Tensor): [Tensor, Tensor] {
    const op = 'KVCache.update';
    checkTensorArg(op, 'k', k);
    checkTensorArg(op, 'v', v);
    const buf = this.#keys[layer];
    if (!buf) throw flockError('ERR_INDEX', op, `layer ${layer} is out of range for ${this.#keys.length} layers`);
    const t = k.shape[2];
    const [, b, h, d] = buf.shape;
    if (
      k.ndim !== 4 ||
      k.shape[0] !== b ||
      k.shape[1] !== h ||
      k.shape[3] !== d ||
      v.ndim !== 4 ||
      v.shape.some((s, i) => s !== k.shape[i])
    )
      throw shapeError(op, `keys and values must be [${b}, ${h}, t, ${d}], got ${shapeStr(k.shape)} and ${shapeStr(v.shape)}`);
    const end = this.#length + t;
    if (end > this.maxLength) throw flockError('ERR_RANGE', op, `${end} positions exceed the cache's ${this.maxLength}`);
    // One token: [b, h, 1, d] is [1, b, h, d] as it lies, a reshape rather than a permute's copy.
    const rows = (x: Tensor) => (t === 1 ? x.reshape([1, b, h, d]) : x.permute([2, 0, 1, 3]));
    noGrad(() => {
      buf.narrow(0, this.#length, t).copy_(rows(k));
      this.#values[layer].narrow(0, this.#length, t).copy_(rows(v));
    });
    const read = (x: Tensor) => x.narrow(0, 0, end).permute([1, 2, 0, 3]);
    return [read(buf), read(this.#values[layer])];
  }

  /** Marks `t` more positions filled, after every layer has written them. */
  advance(t: number): void {
    if (this.#length + t > this.maxLength)
      throw flockError('ERR_RANGE', 'KVCache.advance', `${this.#length + t} positions exceed ${this.maxLength}`);
    this.#length += t;
  }

  /** Frees the buffers. */
  dispose(): void {
    for (const x of [...this.#keys, ...this.#values]) x.dispose();
    this.#keys.length = 0;
    this.#values.length = 0;
  }

  [Symbol.dispose](): void {
    this.dispose();
  }
}
