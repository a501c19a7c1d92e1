/** The fused attention (cpp/bindings/attention.cc). */
import { group, hand } from './dsl';

export const attentionExports = group('attention', 'fused attention', [
  hand(
    'attention',
    null,
    '(q: NativeTensor, k: NativeTensor, v: NativeTensor, mask: NativeTensor | null, maskDivisor: number, maskPeriod: number, isCausal: boolean, scale: number, dropoutP: number, seed: number, offset: number): [NewTensor, NewTensor]',
    "Fused scaled dot-product attention on q [b, tq, d], k [b, tk, d], v [b, tk, dv]; the mask (bool: true attends, or additive in q's dtype) is [mask batch, 1 | tq, 1 | tk], element (bi, i, j) at batch (bi / maskDivisor) % maskPeriod. Returns [out [b, tq, dv], logsumexp [b, tq]].",
  ),
  hand(
    'attentionBackward',
    null,
    '(q: NativeTensor, k: NativeTensor, v: NativeTensor, out: NativeTensor, lse: NativeTensor, grad: NativeTensor, mask: NativeTensor | null, maskDivisor: number, maskPeriod: number, isCausal: boolean, scale: number, dropoutP: number, seed: number, offset: number): [NewTensor, NewTensor, NewTensor]',
    'Gradients [gq, gk, gv] of {@link attention}, recomputing the scores from the saved logsumexp.',
  ),
  hand(
    'attentionPacked',
    null,
    '(qkv: NativeTensor, heads: number, batchFirst: boolean, mask: NativeTensor | null, maskDivisor: number, maskPeriod: number, isCausal: boolean, scale: number, dropoutP: number, seed: number, offset: number): [NewTensor, NewTensor]',
    'Self-attention over a packed projection qkv ([n, len, 3·embed] when batchFirst, else [len, n, 3·embed]; f32, bf16 or f16, CPU) split into `heads` heads in place; the mask as for {@link attention} with batch (n, head). Returns [out [n, len, embed] or [len, n, embed], logsumexp [n·heads, len]].',
  ),
  hand(
    'attentionPackedBackward',
    null,
    '(qkv: NativeTensor, out: NativeTensor, lse: NativeTensor, grad: NativeTensor, heads: number, batchFirst: boolean, mask: NativeTensor | null, maskDivisor: number, maskPeriod: number, isCausal: boolean, scale: number, dropoutP: number, seed: number, offset: number): NewTensor',
    "The gradient of qkv (qkv's shape) of {@link attentionPacked}.",
  ),
]);
