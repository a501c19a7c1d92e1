/**
 * ParallelMultiheadAttention: nn.MultiheadAttention with its heads split across the group. Each
 * rank projects q, k and v for its heads only (its rows of in_proj_weight: a column-parallel
 * projection), runs fused attention on them, and projects back with its columns of out_proj (a
 * row-parallel projection) whose partial outputs are summed over the group. Parameters are this
 * rank's slices of the ones nn.MultiheadAttention would draw from the same random state. Dropout
 * on the attention weights draws from the tensor-parallel generator (rng.ts), so each rank's heads
 * get their own masks, and the global generator does not move.
 */
import type { Tensor } from '../../tensor';
import type { DType } from '../../dtype';
import type { ProcessGroup } from '../../distributed/process_group';
import { Module } from '../../nn/module';
import { MultiheadAttention } from '../../nn/attention';
import type { Parameter } from '../../nn/parameter';
import { linear } from '../../nn/functional/basic';
import { scaledDotProductAttention } from '../../nn/functional/attention';
import { cat } from '../../ops/shape';
import { tensor, zeros } from '../../ops/creation';
import { logicalAnd, logicalNot } from '../../ops/elementwise';
import { noGrad } from '../../dispatch/grad_mode';
import { checkOptions, flockError } from '../../errors';
import { checkBool, checkInt, checkNumber, checkOptionalTensor } from '../../validate';
import { checkGroup, copyToParallel, reduceFromParallel } from './mappings';
import { copyParameter, shardParameter, split } from './shard';
import { ParallelRng } from './rng';

export interface ParallelMultiheadAttentionOptions {
  /** The tensor-parallel group the heads are split over (required). */
  group: ProcessGroup;
  /** Dropout on the attention weights while training (default 0). */
  dropout?: number;
  /** Biases on the input and output projections (default true). */
  bias?: boolean;
  /** Inputs and output are [batch, seq, feature] instead of [seq, batch, feature] (default false). */
  batchFirst?: boolean;
  /** Feature sizes of key and value (default embedDim); when either differs, q, k and v have separate weights, as PyTorch. */
  kdim?: number;
  vdim?: number;
  dtype?: DType;
  device?: string;
}

export interface ParallelMultiheadAttentionForwardOptions {
  /** [batch, S] bool: true where a key is padding and must be ignored. */
  keyPaddingMask?: Tensor | null;
  /** [L, S] or [batch·heads, L, S] (all heads, as nn.MultiheadAttention): bool true where blocked, or added to the scores. */
  attnMask?: Tensor | null;
  /** Query i sees keys j ≤ i only. */
  isCausal?: boolean;
  /** Only false is accepted: the attention weights are split across ranks by head and never formed whole. */
  needWeights?: false;
}

const OP = 'ParallelMultiheadAttention';

/** The output projection's parameters under nn.MultiheadAttention's names (out_proj.weight, out_proj.bias). */
class OutProjection extends Module {
  constructor(
    /** This rank's columns of the unsplit out_proj.weight. */
    public weight: Parameter,
    /** Replicated. */
    public bias: Parameter | null,
  ) {
    super();
  }

  forward(): never {
    throw flockError('ERR_ARG', OP, 'out_proj runs inside ParallelMultiheadAttention.forward');
  }
}

export class ParallelMultiheadAttention extends Module {
  /** This rank's rows of nn.MultiheadAttention's in_proj_weight: its heads' q, then k, then v rows (null with kdim/vdim). */
  in_proj_weight: Parameter | null;
  /** With kdim or vdim: this rank's heads' rows of the separate projections. */
  q_proj_weight: Parameter | null;
  k_proj_weight: Parameter | null;
  v_proj_weight: Parameter | null;
  in_proj_bias: Parameter | null;
  /** This rank's columns of out_proj.weight, and the replicated out_proj.bias. */
  out_proj: OutProjection;
  readonly group: ProcessGroup;
  readonly headDim: number;
  readonly headsPerRank: number;
  readonly dropout: number;
  readonly batchFirst: boolean;
  readonly kdim: number;
  readonly vdim: number;
  readonly #rng: ParallelRng;

  constructor(
    readonly embedDim: number,
    readonly numHeads: number,
    options: ParallelMultiheadAttentionOptions,
  ) {
    super();
    const o = checkOptions(OP, options, ['group', 'dropout', 'bias', 'batchFirst', 'kdim', 'vdim', 'dtype', 'device']);
    this.group = checkGroup(OP, o.group);
    checkInt(OP, 'embedDim', embedDim, 1);
    checkInt(OP, 'numHeads', numHeads, 1);
    this.headsPerRank = split(OP, 'numHeads', numHeads, this.group.size);
    this.dropout = checkNumber(OP, 'dropout', o.dropout ?? 0, { min: 0, max: 1 });
    this.batchFirst = checkBool(OP, 'batchFirst', o.batchFirst ?? false);
    this.#rng = new ParallelRng(this.group);
    const full = new MultiheadAttention(embedDim, numHeads, {
      bias: o.bias ?? true,
      dtype: o.dtype,
      device: o.device,
      ...(o.kdim === undefined ? {} : { kdim: o.kdim }),
      ...(o.vdim === undefined ? {} : { vdim: o.vdim }),
    });
    this.kdim = full.kdim;
    this.vdim = full.vdim;
    this.headDim = full.headDim;
    const E = embedDim;
    const { rank, size } = this.group;
    // q, k and v blocks of E rows each; this rank takes its heads' rows of every block.
    const blocks = (p: Tensor) =>
      noGrad(() =>
        cat(
          [0, 1, 2].map((i) => p.narrow(0, i * E, E).chunk(size, 0)[rank]),
          0,
        ),
      );
    this.in_proj_weight = full.in_proj_weight ? copyParameter(blocks(full.in_proj_weight)) : null;
    const heads = (w: Parameter | null) => (w ? shardParameter(w, 0, rank, size) : null);
    this.q_proj_weight = heads(full.q_proj_weight);
    this.k_proj_weight = heads(full.k_proj_weight);
    this.v_proj_weight = heads(full.v_proj_weight);
    this.in_proj_bias = full.in_proj_bias ? copyParameter(blocks(full.in_proj_bias)) : null;
    this.out_proj = new OutProjection(
      shardParameter(full.out_proj.weight, 1, rank, size),
      full.out_proj.bias ? copyParameter(full.out_proj.bias) : null,
    );
    for (const p of full.parameters()) p.dispose();
  }

  /** The output, shaped like query ([L, N, E], [N, L, E] with batchFirst, or [L, E]), the same on every rank. */
  forward(query: Tensor, key: Tensor, value: Tensor, options: ParallelMultiheadAttentionForwardOptions = {}): Tensor {
    const o = checkOptions(OP, options, ['keyPaddingMask', 'attnMask', 'isCausal', 'needWeights']);
    if (o.needWeights !== undefined && o.needWeights !== false)
      throw flockError('ERR_ARG', OP, 'needWeights must be false: the attention weights are split across ranks by head');
    const isCausal = checkBool(OP, 'isCausal', o.isCausal ?? false);
    const kpm = checkOptionalTensor(OP, 'keyPaddingMask', o.keyPaddingMask);
    const am = checkOptionalTensor(OP, 'attnMask', o.attnMask);
    for (const [name, t] of [
      ['query', query],
      ['key', key],
      ['value', value],
    ] as const)
      if (typeof t !== 'object' || t === null || !('shape' in t)) throw flockError('ERR_ARG', OP, `${name} must be a Tensor`);
    const batched = query.ndim === 3;
    if ((!batched && query.ndim !== 2) || key.ndim !== query.ndim || value.ndim !== query.ndim)
      throw flockError(
        'ERR_SHAPE',
        OP,
        `query, key and value must all be [L, E] or all 3-D, got [${query.shape}], [${key.shape}], [${value.shape}]`,
      );
    const toNLE = (x: Tensor) => (!batched ? x.unsqueeze(0) : this.batchFirst ? x : x.transpose(0, 1));
    const selfAttention = query === key && key === value;
    const q = toNLE(query);
    const k = toNLE(key);
    const v = toNLE(value);
    const [n, l, e] = q.shape;
    const s = k.shape[1];
    if (e !== this.embedDim || k.shape[2] !== this.kdim || v.shape[2] !== this.vdim)
      throw flockError(
        'ERR_SHAPE',
        OP,
        `query, key and value must have ${this.embedDim}, ${this.kdim} and ${this.vdim} features, got [${query.shape}], [${key.shape}], [${value.shape}]`,
      );
    if (k.shape[0] !== n || v.shape[0] !== n || v.shape[1] !== s)
      throw flockError(
        'ERR_SHAPE',
        OP,
        `query [${query.shape}], key [${key.shape}] and value [${value.shape}] disagree on batch or source length`,
      );
    const mask = this.#mask(kpm, am, isCausal, n, l, s, q.dtype);

    const El = this.headsPerRank * this.headDim;
    const sep = [this.q_proj_weight, this.k_proj_weight, this.v_proj_weight];
    const w = (i: number) => sep[i] ?? (this.in_proj_weight as Parameter).narrow(0, i * El, El);
    const b = (i: number) => (this.in_proj_bias ? this.in_proj_bias.narrow(0, i * El, El) : null);
    let qp: Tensor, kp: Tensor, vp: Tensor;
    if (selfAttention && this.in_proj_weight) {
      [qp, kp, vp] = linear(copyToParallel(q, this.group), this.in_proj_weight, this.in_proj_bias).chunk(3, -1);
    } else {
      qp = linear(copyToParallel(q, this.group), w(0), b(0));
      kp = linear(copyToParallel(k, this.group), w(1), b(1));
      vp = linear(copyToParallel(v, this.group), w(2), b(2));
    }
    const heads = (x: Tensor, len: number) => x.reshape([n, len, this.headsPerRank, this.headDim]).permute([0, 2, 1, 3]);
    const p = this.training ? this.dropout : 0;
    const attend = () =>
      scaledDotProductAttention(heads(qp, l), heads(kp, s), heads(vp, s), { attnMask: mask, dropoutP: p, isCausal: isCausal && !mask });
    const attn = p > 0 ? this.#rng.run(attend) : attend();
    const mixed = linear(attn.permute([0, 2, 1, 3]).reshape([n, l, El]), this.out_proj.weight);
    let out = reduceFromParallel(mixed, this.group);
    if (this.out_proj.bias) out = out.add(this.out_proj.bias);
    return !batched ? out.squeeze(0) : this.batchFirst ? out : out.transpose(0, 1);
  }

  /** The masks in attend form (true or an added score where attention is allowed) for this rank's heads. */
  #mask(kpm: Tensor | null, am: Tensor | null, isCausal: boolean, n: number, l: number, s: number, dtype: DType): Tensor | null {
    const parts: Tensor[] = [];
    if (kpm) {
      const k2 = kpm.ndim === 1 ? kpm.unsqueeze(0) : kpm;
      if (kpm.dtype !== 'bool' || k2.ndim !== 2 || k2.shape[0] !== n || k2.shape[1] !== s)
        throw flockError('ERR_SHAPE', OP, `keyPaddingMask must be a bool [${n}, ${s}] tensor, got ${kpm.dtype} [${kpm.shape}]`);
      parts.push(logicalNot(k2).reshape([n, 1, 1, s]));
    }
    if (am) {
      let m: Tensor;
      if (am.ndim === 2 && am.shape[0] === l && am.shape[1] === s) m = am;
      else if (am.ndim === 3 && am.shape[0] === n * this.numHeads && am.shape[1] === l && am.shape[2] === s)
        m = am.reshape([n, this.numHeads, l, s]).narrow(1, this.group.rank * this.headsPerRank, this.headsPerRank);
      else throw flockError('ERR_SHAPE', OP, `attnMask must be [${l}, ${s}] or [${n * this.numHeads}, ${l}, ${s}], got [${am.shape}]`);
      if (m.dtype !== 'bool' && m.dtype !== dtype)
        throw flockError('ERR_DTYPE', OP, `attnMask must be bool or the query's dtype ${dtype}, got ${m.dtype}`);
      parts.push(m.dtype === 'bool' ? logicalNot(m) : m);
    }
    if (parts.length === 0) return null;
    // With another mask the fused kernel's causal cut cannot be used: the cut joins the mask.
    if (isCausal) {
      const allowed = Array.from({ length: l * s }, (_, i) => Number(i % s <= Math.floor(i / s)));
      parts.push(tensor(Uint8Array.from(allowed), { dtype: 'bool', shape: [l, s], device: parts[0].device }));
    }
    if (parts.every((p) => p.dtype === 'bool')) return parts.reduce((a, c) => logicalAnd(a, c));
    const additive = (m: Tensor) =>
      m.dtype === 'bool' ? zeros([...m.shape], { dtype, device: m.device }).maskedFill(logicalNot(m), -Infinity) : m;
    return parts.map(additive).reduce((a, c) => a.add(c));
  }

  override extraRepr(): string {
    return `embedDim=${this.embedDim}, numHeads=${this.numHeads}, kdim=${this.kdim}, vdim=${this.vdim}, headsPerRank=${this.headsPerRank}, batchFirst=${this.batchFirst}, tp=${this.group.size}`;
  }
}
