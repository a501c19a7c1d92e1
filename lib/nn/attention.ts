/**
 * MultiheadAttention with PyTorch's semantics, options and state-dict names (in_proj_weight, or
 * q/k/v_proj_weight when kdim/vdim differ from embedDim; in_proj_bias; out_proj). Without
 * needWeights the heads run through the fused scaledDotProductAttention kernel (self-attention on
 * the CPU in f32/bf16/f16: straight from the packed projection, attention_packed.ts); with it, the
 * weights are formed explicitly, as PyTorch does, so they can be returned.
 */
import type { Tensor } from '../tensor';
import { tensor, zeros } from '../ops/creation';
import type { DType } from '../dtype';
import { isFloating } from '../dtype';
import { Module } from './module';
import { type Parameter, ownParameter } from './parameter';
import { Linear } from './linear';
import { constant_, xavierUniform_ } from './init';
import { dropout, linear } from './functional/basic';
import { scaledDotProductAttention } from './functional/attention';
import { canPackAttention, packedSelfAttention } from './functional/attention_packed';
import { tensorArg } from './functional/args';
import { checkOptions, dtypeError, flockError, shapeError } from '../errors';
import { checkBool, checkInt, checkNumber, checkOptionalTensor } from '../validate';
import { shapeStr } from '../ops/util';
import { softmax } from '../ops/reduce';
import { logicalAnd, logicalNot } from '../ops/elementwise';

export interface MultiheadAttentionOptions {
  /** Dropout on the attention weights while training (default 0). */
  dropout?: number;
  /** Biases on the input and output projections (default true). */
  bias?: boolean;
  /** Feature sizes of key and value (default embedDim). */
  kdim?: number;
  vdim?: number;
  /** Inputs and output are [batch, seq, feature] instead of [seq, batch, feature] (default false). */
  batchFirst?: boolean;
  dtype?: DType;
  device?: string;
}

export interface MultiheadAttentionForwardOptions {
  /** [batch, S]: true (or -inf added) where a key is padding and must be ignored. */
  keyPaddingMask?: Tensor | null;
  /** Return the attention weights (default true, as PyTorch). */
  needWeights?: boolean;
  /** [L, S] or [batch·heads, L, S]: true (or -inf added) where attention is not allowed. */
  attnMask?: Tensor | null;
  /** Average the returned weights over heads (default true); otherwise [batch, heads, L, S]. */
  averageAttnWeights?: boolean;
  /** Query i sees keys j ≤ i only; with no other mask it runs as the fused kernel's causal cut. */
  isCausal?: boolean;
}

/** PyTorch's masks say where attention is blocked; turns one into fused attention's form. */
function asAttend(op: string, name: string, m: Tensor, dtype: DType): Tensor {
  if (m.dtype === 'bool') return logicalNot(m);
  if (m.dtype !== dtype)
    throw dtypeError(
      op,
      `${name} must be bool or the query's dtype ${dtype}, got ${m.dtype}${isFloating(m.dtype) ? '' : ' (byte masks: use bool)'}`,
    );
  return m;
}

/** Combines two masks in attend form: both bool → and; otherwise additive (blocked → -inf). */
function combine(a: Tensor | null, b: Tensor | null, dtype: DType): Tensor | null {
  if (!a || !b) return a ?? b;
  if (a.dtype === 'bool' && b.dtype === 'bool') return logicalAnd(a, b);
  const additive = (m: Tensor) =>
    m.dtype === 'bool' ? zeros([...m.shape], { dtype, device: m.device }).maskedFill(logicalNot(m), -Infinity) : m;
  return additive(a).add(additive(b));
}

export class MultiheadAttention extends Module {
  in_proj_weight: Parameter | null;
  q_proj_weight: Parameter | null;
  k_proj_weight: Parameter | null;
  v_proj_weight: Parameter | null;
  in_proj_bias: Parameter | null;
  out_proj: Linear;

  readonly kdim: number;
  readonly vdim: number;
  readonly headDim: number;
  readonly dropout: number;
  readonly batchFirst: boolean;

  constructor(
    readonly embedDim: number,
    readonly numHeads: number,
    options: MultiheadAttentionOptions = {},
  ) {
    super();
    const op = 'MultiheadAttention';
    const o = checkOptions(op, options, ['dropout', 'bias', 'kdim', 'vdim', 'batchFirst', 'dtype', 'device']);
    checkInt(op, 'embedDim', embedDim, 1);
    checkInt(op, 'numHeads', numHeads, 1);
    if (embedDim % numHeads !== 0) throw flockError('ERR_ARG', op, `embedDim ${embedDim} must be divisible by numHeads ${numHeads}`);
    this.kdim = o.kdim === undefined ? embedDim : checkInt(op, 'kdim', o.kdim, 1);
    this.vdim = o.vdim === undefined ? embedDim : checkInt(op, 'vdim', o.vdim, 1);
    this.headDim = embedDim / numHeads;
    this.dropout = checkNumber(op, 'dropout', o.dropout ?? 0, { min: 0, max: 1 });
    this.batchFirst = checkBool(op, 'batchFirst', o.batchFirst ?? false);
    const bias = checkBool(op, 'bias', o.bias ?? true);
    const t = { dtype: o.dtype, device: o.device };
    const same = this.kdim === embedDim && this.vdim === embedDim;
    this.in_proj_weight = same ? ownParameter(zeros([3 * embedDim, embedDim], t)) : null;
    this.q_proj_weight = same ? null : ownParameter(zeros([embedDim, embedDim], t));
    this.k_proj_weight = same ? null : ownParameter(zeros([embedDim, this.kdim], t));
    this.v_proj_weight = same ? null : ownParameter(zeros([embedDim, this.vdim], t));
    this.in_proj_bias = bias ? ownParameter(zeros([3 * embedDim], t)) : null;
    this.out_proj = new Linear(embedDim, embedDim, { bias, dtype: o.dtype, device: o.device });
    for (const w of [this.in_proj_weight, this.q_proj_weight, this.k_proj_weight, this.v_proj_weight]) if (w) xavierUniform_(w);
    if (this.in_proj_bias) constant_(this.in_proj_bias, 0);
    if (this.out_proj.bias) constant_(this.out_proj.bias, 0);
  }

  /**
   * Returns [output, weights]: output like query ([L, N, E], or [N, L, E] with batchFirst, or
   * [L, E] unbatched); weights [N, L, S] (averaged) or [N, heads, L, S], or null without needWeights.
   */
  forward(query: Tensor, key: Tensor, value: Tensor, options: MultiheadAttentionForwardOptions = {}): [Tensor, Tensor | null] {
    const op = 'MultiheadAttention';
    const o = checkOptions(op, options, ['keyPaddingMask', 'needWeights', 'attnMask', 'averageAttnWeights', 'isCausal']);
    let isCausal = checkBool(op, 'isCausal', o.isCausal ?? false);
    tensorArg(op, 'query', query);
    tensorArg(op, 'key', key);
    tensorArg(op, 'value', value);
    const needWeights = checkBool(op, 'needWeights', o.needWeights ?? true);
    const average = checkBool(op, 'averageAttnWeights', o.averageAttnWeights ?? true);
    let kpm = checkOptionalTensor(op, 'keyPaddingMask', o.keyPaddingMask);
    let am = checkOptionalTensor(op, 'attnMask', o.attnMask);
    const batched = query.ndim === 3;
    if (!batched && query.ndim !== 2) throw shapeError(op, `query must be [L, E] or 3-D, got ${shapeStr(query.shape)}`);
    if (key.ndim !== query.ndim || value.ndim !== query.ndim)
      throw shapeError(
        op,
        `query ${shapeStr(query.shape)}, key ${shapeStr(key.shape)} and value ${shapeStr(value.shape)} must have equal ranks`,
      );
    // To [N, L, E].
    const toNLE = (x: Tensor) => (!batched ? x.unsqueeze(0) : this.batchFirst ? x : x.transpose(0, 1));
    const q = toNLE(query);
    const k = toNLE(key);
    const v = toNLE(value);
    const [n, l, e] = q.shape;
    const s = k.shape[1];
    const H = this.numHeads;
    if (e !== this.embedDim) throw shapeError(op, `query has ${e} features, expected embedDim ${this.embedDim}`);
    if (k.shape[2] !== this.kdim || v.shape[2] !== this.vdim)
      throw shapeError(
        op,
        `key and value must have ${this.kdim} and ${this.vdim} features, got ${shapeStr(key.shape)} and ${shapeStr(value.shape)}`,
      );
    if (k.shape[0] !== n || v.shape[0] !== n || v.shape[1] !== s)
      throw shapeError(
        op,
        `query ${shapeStr(query.shape)}, key ${shapeStr(key.shape)} and value ${shapeStr(value.shape)} disagree on batch or source length`,
      );
    if (kpm) {
      if (!batched && kpm.ndim === 1) kpm = kpm.unsqueeze(0);
      if (kpm.ndim !== 2 || kpm.shape[0] !== n || kpm.shape[1] !== s)
        throw shapeError(op, `keyPaddingMask must be [${batched ? `${n}, ` : ''}${s}], got ${shapeStr(kpm.shape)}`);
      kpm = asAttend(op, 'keyPaddingMask', kpm, q.dtype).reshape([n, 1, 1, s]);
    }
    if (am) {
      if (am.ndim === 2) {
        if (am.shape[0] !== l || am.shape[1] !== s) throw shapeError(op, `2-D attnMask must be [${l}, ${s}], got ${shapeStr(am.shape)}`);
      } else if (am.ndim === 3) {
        if (am.shape[0] !== n * H || am.shape[1] !== l || am.shape[2] !== s)
          throw shapeError(op, `3-D attnMask must be [${n * H}, ${l}, ${s}], got ${shapeStr(am.shape)}`);
        am = am.reshape([n, H, l, s]);
      } else throw shapeError(op, `attnMask must be 2-D or 3-D, got ${shapeStr(am.shape)}`);
      am = asAttend(op, 'attnMask', am, q.dtype);
    }
    let mask = combine(am, kpm, q.dtype);
    if (isCausal && (mask || needWeights)) {
      const upper = Array.from({ length: l * s }, (_, i) => i % s > Math.floor(i / s));
      mask = combine(logicalNot(tensor(Uint8Array.from(upper, Number), { dtype: 'bool', shape: [l, s], device: q.device })), mask, q.dtype);
      isCausal = false;
    }
    // Projections: one matmul for self-attention, three slices of the weight otherwise.
    const E = this.embedDim;
    const bias = (i: number) => (this.in_proj_bias ? this.in_proj_bias.narrow(0, i * E, E) : null);
    const p = this.training ? this.dropout : 0;
    let qp: Tensor, kp: Tensor, vp: Tensor;
    if (this.in_proj_weight && query === key && key === value) {
      // Self-attention: one projection in the input's own layout; on the CPU the fused kernel
      // reads the heads from it in place (no transposes, no head split or merge copies).
      const bf = !batched || this.batchFirst;
      const qkv = linear(batched ? query : query.unsqueeze(0), this.in_proj_weight, this.in_proj_bias);
      if (!needWeights && canPackAttention(qkv) && !mask?.requiresGrad) {
        const out = this.out_proj.forward(packedSelfAttention(qkv, H, bf, { attnMask: mask, isCausal, dropoutP: p }));
        return [batched ? out : out.squeeze(0), null];
      }
      [qp, kp, vp] = (bf ? qkv : qkv.transpose(0, 1)).chunk(3, -1);
    } else {
      const w = (i: number, sep: Parameter | null) => sep ?? (this.in_proj_weight as Parameter).narrow(0, i * E, E);
      qp = linear(q, w(0, this.q_proj_weight), bias(0));
      kp = linear(k, w(1, this.k_proj_weight), bias(1));
      vp = linear(v, w(2, this.v_proj_weight), bias(2));
    }
    const heads = (x: Tensor, len: number) => x.reshape([n, len, H, this.headDim]).permute([0, 2, 1, 3]);
    const qh = heads(qp, l);
    const kh = heads(kp, s);
    const vh = heads(vp, s);
    let attn: Tensor;
    let weights: Tensor | null = null;
    if (needWeights) {
      let sc = qh.matmul(kh.transpose(-2, -1)).mul(1 / Math.sqrt(this.headDim));
      if (mask) sc = mask.dtype === 'bool' ? sc.maskedFill(logicalNot(mask), -Infinity) : sc.add(mask);
      weights = softmax(sc, -1);
      if (p > 0) weights = dropout(weights, p, true);
      attn = weights.matmul(vh);
      if (average) weights = weights.mean(1);
      if (!batched) weights = weights.squeeze(0);
    } else {
      attn = scaledDotProductAttention(qh, kh, vh, { attnMask: mask, dropoutP: p, isCausal });
    }
    let out = this.out_proj.forward(attn.permute([0, 2, 1, 3]).reshape([n, l, E]));
    out = !batched ? out.squeeze(0) : this.batchFirst ? out : out.transpose(0, 1);
    return [out, weights];
  }

  override extraRepr(): string {
    return `embedDim=${this.embedDim}, numHeads=${this.numHeads}, kdim=${this.kdim}, vdim=${this.vdim}, batchFirst=${this.batchFirst}`;
  }
}
