/**
 * One decoding step's context: position ids and the attention mask built from a padding mask as
 * transformers builds them, and grouped-query attention over the KV cache.
 */
import type { Tensor } from '../tensor';
import { tensor } from '../ops/creation';
import { scaledDotProductAttention } from '../nn/functional/attention';
import { flockError, shapeError } from '../errors';
import { checkTensorArg } from '../validate';
import { shapeStr } from '../ops/util';
import type { KVCache } from './kv_cache';

/** What one forward step needs besides the token ids. */
export interface StepContext {
  /** Each row's position id for each new token, [batch][t] (transformers: cumsum(mask) - 1, pads 1). */
  positions: number[][];
  /** bool [batch, 1, t, keys] (true: may attend), or null when `causal` or every key is visible. */
  mask: Tensor | null;
  /** Plain causal attention over the new tokens alone (no cache prefix, no padding). */
  causal: boolean;
  cache: KVCache | null;
  /** Apply the head to the last position only (decoding needs no more). */
  lastOnly: boolean;
}

/**
 * The context for `t` new tokens after `start` cached ones, given each row's padding mask over all
 * start + t keys (1 real, 0 padding). A padding query attends to itself alone, so no row of the
 * softmax is empty; real tokens never see padding keys.
 */
export function stepContext(keyMask: number[][], start: number, t: number, cache: KVCache | null, lastOnly: boolean): StepContext {
  const b = keyMask.length;
  const s = start + t;
  const positions: number[][] = [];
  let padded = false;
  for (const row of keyMask) {
    let count = 0;
    const pos: number[] = [];
    for (let j = 0; j < s; j++) {
      if (row[j]) count++;
      else padded = true;
      if (j >= start) pos.push(row[j] ? count - 1 : 1);
    }
    positions.push(pos);
  }
  if (!padded && start === 0) return { positions, mask: null, causal: t > 1, cache, lastOnly };
  if (!padded && t === 1) return { positions, mask: null, causal: false, cache, lastOnly };
  const m = new Uint8Array(b * t * s);
  for (let r = 0; r < b; r++)
    for (let i = 0; i < t; i++) for (let j = 0; j <= start + i; j++) m[(r * t + i) * s + j] = keyMask[r][j] || j === start + i ? 1 : 0;
  return { positions, mask: tensor(m, { dtype: 'bool', shape: [b, 1, t, s] }), causal: false, cache, lastOnly };
}

/**
 * Attention of q [batch, heads, t, d] over k, v [batch, kvHeads, s, d] (grouped-query: each
 * key/value head serves heads / kvHeads query heads, as transformers' repeat_kv) → [batch, t, heads·d].
 */
export function attend(q: Tensor, k: Tensor, v: Tensor, ctx: StepContext, scale: number): Tensor {
  const [b, h, t, d] = q.shape;
  const kvh = k.shape[1];
  const mask = ctx.mask && ctx.mask.device !== q.device ? ctx.mask.to(q.device) : ctx.mask;
  if (kvh !== h && t === 1) {
    // One new token: the query heads that share a key/value head are that head's queries
    // ([b, kvh, h / kvh, d], a view), so the cache is read as it is instead of repeated per head.
    const out = scaledDotProductAttention(q.reshape([b, kvh, h / kvh, d]), k, v, { attnMask: mask, scale });
    return out.reshape([b, 1, h * d]);
  }
  if (kvh !== h) {
    const repeat = (x: Tensor) =>
      x
        .unsqueeze(2)
        .expand([b, kvh, h / kvh, x.shape[2], d])
        .reshape([b, h, x.shape[2], d]);
    k = repeat(k);
    v = repeat(v);
  }
  const out = scaledDotProductAttention(q, k, v, { attnMask: mask, isCausal: ctx.causal, scale });
  return t === 1 ? out.reshape([b, 1, h * d]) : out.permute([0, 2, 1, 3]).reshape([b, t, h * d]);
}

/** A row-major [batch][t] array of integers from a 2-D tensor or nested array. */
export function rowsOf(op: string, name: string, x: Tensor | number[][]): number[][] {
  if (Array.isArray(x)) {
    if (x.length === 0 || !x.every((r) => Array.isArray(r) && r.length === x[0].length && r.every(Number.isInteger)))
      throw shapeError(op, `${name} must be a non-empty [batch][tokens] array of integers of equal lengths`);
    return x;
  }
  checkTensorArg(op, name, x);
  if (x.ndim !== 2) throw shapeError(op, `${name} must be [batch, tokens], got ${shapeStr(x.shape)}`);
  if (x.dtype !== 'i64' && x.dtype !== 'i32' && x.dtype !== 'bool' && x.dtype !== 'u8')
    throw flockError('ERR_DTYPE', op, `${name} must be an integer or bool tensor, got ${x.dtype}`);
  return (x.to('i32').tolistSync() as number[][]).map((r) => r.map(Number));
}
