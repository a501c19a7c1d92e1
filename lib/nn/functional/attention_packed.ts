/**
 * Self-attention straight from one packed input projection, as MultiheadAttention makes it:
 * qkv [n, len, 3·embed] (or [len, n, 3·embed]) → [n, len, embed] (or [len, n, embed]). The fused
 * CPU kernel reads each head's query, key and value columns in place and writes each head's output
 * columns, so neither the head split nor the merge is a copy, and backward gives qkv's gradient
 * as one tensor (no per-chunk zero padding and concatenation).
 */
import type { Tensor } from '../../tensor';
import { native } from '../../native';
import { record } from '../../dispatch/record';
import { wrap } from '../../ops/util';
import { nextDraw } from '../../random';
import { type MaskPlan, maskArgs, planMask } from './attention';

export interface PackedAttentionOptions {
  /** In fused attention's form (true or 0 where the query may attend), broadcastable to [n, heads, len, len]. */
  attnMask?: Tensor | null;
  isCausal?: boolean;
  dropoutP?: number;
}

/** Whether {@link packedSelfAttention} runs on `qkv`: the CPU kernel takes f32, bf16 and f16. */
export function canPackAttention(qkv: Tensor): boolean {
  return qkv.device.startsWith('cpu') && (qkv.dtype === 'f32' || qkv.dtype === 'bf16' || qkv.dtype === 'f16');
}

/**
 * softmax(q·kᵀ/√d + mask)·v per head over the packed qkv (checked by the caller, MultiheadAttention:
 * 3-D, last dim 3·embed, embed divisible by `heads`, the mask in attend form and not requiring grad).
 */
export function packedSelfAttention(qkv: Tensor, heads: number, batchFirst: boolean, o: PackedAttentionOptions = {}): Tensor {
  const [n, len] = batchFirst ? [qkv.shape[0], qkv.shape[1]] : [qkv.shape[1], qkv.shape[0]];
  const d = qkv.shape[2] / 3 / heads;
  const dropoutP = o.dropoutP ?? 0;
  const plan: MaskPlan = o.attnMask ? planMask(o.attnMask, [n, heads], len, len) : { mask: null, div: 1, mod: 1 };
  const { seed, offset } = dropoutP > 0 ? nextDraw(n * heads * len * len) : { seed: 0, offset: 0 };
  const tail = () => [...maskArgs(plan), o.isCausal ?? false, 1 / Math.sqrt(d), dropoutP, seed, offset] as const;
  const [outH, lseH] = native.attentionPacked(qkv.handle, heads, batchFirst, ...tail());
  const out = wrap(outH);
  const lse = wrap(lseH);
  return record(out, 'scaledDotProductAttention', [qkv], (g) => [
    wrap(native.attentionPackedBackward(qkv.handle, out.handle, lse.handle, g.handle, heads, batchFirst, ...tail())),
  ]);
}
