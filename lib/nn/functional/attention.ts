/**
 * scaledDotProductAttention: softmax(q·kᵀ·scale + mask)·v as one fused kernel (forward and
 * backward) that never holds the [tq, tk] score matrix; see cpp/cpu/attention.cc and
 * cuda/attention.cu.
 */
import type { Tensor } from '../../tensor';
import { native, type NewTensor } from '../../native';
import { record } from '../../dispatch/record';
import { shapeStr, wrap } from '../../ops/util';
import { checkOptions, dtypeError, flockError, shapeError } from '../../errors';
import { checkBool, checkNumber, checkOptionalTensor } from '../../validate';
import { isFloating } from '../../dtype';
import { autocastArgs } from '../../dispatch/autocast';
import { nextDraw } from '../../random';
import { tensorArg } from './args';

const OP = 'scaledDotProductAttention';

export interface ScaledDotProductAttentionOptions {
  /**
   * Broadcastable to [..., tq, tk]: a bool mask (true: the query may attend to the key) or an
   * additive float mask in the query's dtype (-Infinity blocks). A key-padding mask is one of
   * shape [batch, 1, 1, tk].
   */
  attnMask?: Tensor | null;
  /** Key j is visible to query i only when j ≤ i (top-left aligned; default false). */
  isCausal?: boolean;
  /** Dropout on the attention weights, drawn from the global Philox generator (default 0). */
  dropoutP?: number;
  /** Multiplies q·kᵀ (default 1/√d). */
  scale?: number | null;
}

export interface MaskPlan {
  mask: Tensor | null;
  div: number;
  mod: number;
}

/** The kernels' trailing arguments: the plan's mask, its batch arithmetic, and the rest. */
export function maskArgs(plan: MaskPlan) {
  return [plan.mask === null ? null : plan.mask.handle, plan.div, plan.mod] as const;
}

const prod = (xs: readonly number[]): number => xs.reduce((a, b) => a * b, 1);

/** `h` as a Tensor, disposing `t`, the tensor it was made from. */
function replaced(t: Tensor, h: NewTensor): Tensor {
  const out = wrap(h);
  t.dispose();
  return out;
}

/**
 * The mask as a 3-D [period, 1 | tq, 1 | tk] tensor and the batch arithmetic that finds each
 * (batch, head)'s slice: leading dims the mask broadcasts over outside its first and last varying
 * dims cost nothing; only broadcast dims between two varying ones are materialised.
 */
export function planMask(mask: Tensor, batch: number[], tq: number, tk: number): MaskPlan {
  const full = [...batch, tq, tk];
  if (mask.ndim > full.length || mask.ndim < 1)
    throw shapeError(OP, `attnMask ${shapeStr(mask.shape)} does not broadcast to ${shapeStr(full)}`);
  const ms = [...Array(full.length - mask.ndim).fill(1), ...mask.shape];
  for (let i = 0; i < full.length; i++)
    if (ms[i] !== 1 && ms[i] !== full[i]) throw shapeError(OP, `attnMask ${shapeStr(mask.shape)} does not broadcast to ${shapeStr(full)}`);
  const nb = batch.length;
  const varying: number[] = [];
  for (let i = 0; i < nb; i++) if (ms[i] === batch[i] && batch[i] > 1) varying.push(i);
  const i0 = varying.length ? varying[0] : nb;
  const i1 = varying.length ? varying[varying.length - 1] + 1 : nb;
  const mid = batch.slice(i0, i1);
  const mq = ms[nb];
  const mk = ms[nb + 1];
  let m = wrap(native.reshape(mask.handle, ms));
  const midMask = ms.slice(i0, i1);
  if (midMask.some((s, i) => s !== mid[i])) m = replaced(m, native.expand(m.handle, [...ms.slice(0, i0), ...mid, ...ms.slice(i1)]));
  m = replaced(m, native.reshape(m.handle, [prod(mid), mq, mk]));
  return { mask: m, div: prod(batch.slice(i1)), mod: prod(mid) };
}

/**
 * softmax(q·kᵀ·scale + mask)·v over q [..., tq, d], k [..., tk, d], v [..., tk, dv] (equal leading
 * dims), with PyTorch's semantics: a row that may attend to nothing is NaN, dropout applies to
 * the weights whether or not a module is training (pass 0 in evaluation). Gradients flow to q, k
 * and v; the mask is a constant.
 */
export function scaledDotProductAttention(q: Tensor, k: Tensor, v: Tensor, options: ScaledDotProductAttentionOptions = {}): Tensor {
  tensorArg(OP, 'query', q);
  tensorArg(OP, 'key', k);
  tensorArg(OP, 'value', v);
  const o = checkOptions(OP, options, ['attnMask', 'isCausal', 'dropoutP', 'scale']);
  let mask = checkOptionalTensor(OP, 'attnMask', o.attnMask);
  // Under autocast: q, k, v and an additive mask in the region's low dtype (a bool mask passes).
  [q, k, v, mask] = autocastArgs('nn.functional.scaledDotProductAttention', q, k, v, mask);
  const isCausal = checkBool(OP, 'isCausal', o.isCausal ?? false);
  const dropoutP = checkNumber(OP, 'dropoutP', o.dropoutP ?? 0, { min: 0, max: 1 });
  if (!isFloating(q.dtype)) throw flockError('ERR_DTYPE', OP, `query must be a floating tensor, got ${q.dtype}`);
  if (k.dtype !== q.dtype || v.dtype !== q.dtype) throw dtypeError(OP, `query, key and value are ${q.dtype}, ${k.dtype}, ${v.dtype}`);
  if (k.device !== q.device || v.device !== q.device || (mask && mask.device !== q.device))
    throw flockError(
      'ERR_DEVICE',
      OP,
      `query is on ${q.device}, key on ${k.device}, value on ${v.device}${mask ? `, attnMask on ${mask.device}` : ''}`,
    );
  if (q.ndim < 2 || k.ndim !== q.ndim || v.ndim !== q.ndim)
    throw shapeError(
      OP,
      `query, key and value must have the same number (≥ 2) of dims, got ${shapeStr(q.shape)}, ${shapeStr(k.shape)}, ${shapeStr(v.shape)}`,
    );
  const n = q.ndim;
  const batch = q.shape.slice(0, n - 2);
  const [tq, d] = q.shape.slice(n - 2);
  const [tk, dk] = k.shape.slice(n - 2);
  const dv = v.shape[n - 1];
  const sameBatch = (s: readonly number[]) => s.slice(0, n - 2).every((x, i) => x === batch[i]);
  if (!sameBatch(k.shape) || !sameBatch(v.shape) || dk !== d || v.shape[n - 2] !== tk)
    throw shapeError(
      OP,
      `query ${shapeStr(q.shape)}, key ${shapeStr(k.shape)} and value ${shapeStr(v.shape)} must be [..., tq, d], [..., tk, d] and [..., tk, dv] with equal leading dims`,
    );
  if (mask && isCausal) throw flockError('ERR_ARG', OP, 'attnMask and isCausal cannot both be given (fold the causal cut into the mask)');
  if (mask && mask.dtype !== 'bool' && mask.dtype !== q.dtype)
    throw dtypeError(OP, `attnMask must be bool or the query's dtype ${q.dtype}, got ${mask.dtype}`);
  if (mask?.requiresGrad) throw flockError('ERR_ARG', OP, 'attnMask does not receive a gradient: pass it detached');
  const scale = o.scale === undefined || o.scale === null ? 1 / Math.sqrt(d) : checkNumber(OP, 'scale', o.scale);
  if (!Number.isFinite(scale)) throw flockError('ERR_RANGE', OP, `scale must be finite, got ${scale}`);
  const bh = prod(batch);
  const plan: MaskPlan = mask ? planMask(mask, batch, tq, tk) : { mask: null, div: 1, mod: 1 };
  const { seed, offset } = dropoutP > 0 ? nextDraw(bh * tq * tk) : { seed: 0, offset: 0 };
  const q3 = wrap(native.reshape(q.handle, [bh, tq, d]));
  const k3 = wrap(native.reshape(k.handle, [bh, tk, d]));
  const v3 = wrap(native.reshape(v.handle, [bh, tk, dv]));
  const tail = () => [...maskArgs(plan), isCausal, scale, dropoutP, seed, offset] as const;
  const [out3H, lseH] = native.attention(q3.handle, k3.handle, v3.handle, ...tail());
  const out3 = wrap(out3H);
  const lse = wrap(lseH);
  const out = wrap(native.reshape(out3.handle, [...batch, tq, dv]));
  return record(out, OP, [q, k, v], (g) => {
    const g3 = wrap(native.reshape(g.handle, [bh, tq, dv]));
    const grads = native
      .attentionBackward(q3.handle, k3.handle, v3.handle, out3.handle, lse.handle, g3.handle, ...tail())
      .map((h) => wrap(h));
    const [gq, gk, gv] = grads;
    return [
      q.requiresGrad ? wrap(native.reshape(gq.handle, [...q.shape])) : null,
      k.requiresGrad ? wrap(native.reshape(gk.handle, [...k.shape])) : null,
      v.requiresGrad ? wrap(native.reshape(gv.handle, [...v.shape])) : null,
    ];
  });
}
