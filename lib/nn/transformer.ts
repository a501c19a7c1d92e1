/**
 * Transformer encoder and decoder layers and stacks with PyTorch's semantics and state-dict names
 * (self_attn, multihead_attn, linear1, linear2, norm1..3; layers.<i>.… and norm in the stacks).
 * normFirst selects pre-norm (x + f(norm(x))) instead of post-norm (norm(x + f(x))).
 */
import type { Tensor } from '../tensor';
import type { DType } from '../dtype';
import { arange } from '../ops/creation';
import { tidy } from '../memory';
import { Module } from './module';
import { ModuleList } from './container';
import { Linear } from './linear';
import { Dropout } from './dropout';
import { LayerNorm } from './norm';
import { MultiheadAttention } from './attention';
import { linear } from './functional/basic';
import { argError, checkOptions, describe } from '../errors';
import { checkBool, checkChoice, checkDevice, checkInt, checkNumber } from '../validate';

export type TransformerActivation = 'relu' | 'gelu' | ((x: Tensor) => Tensor);

export interface TransformerLayerOptions {
  /** Hidden size of the feed-forward block (default 2048). */
  dimFeedforward?: number;
  /** Dropout after attention, inside and after the feed-forward block (default 0.1). */
  dropout?: number;
  /** 'relu' (default), 'gelu' (exact) or a function. */
  activation?: TransformerActivation;
  /** LayerNorm epsilon (default 1e-5). */
  layerNormEps?: number;
  /** Inputs are [batch, seq, feature] (default false: [seq, batch, feature]). */
  batchFirst?: boolean;
  /** Pre-norm: normalise before attention and feed-forward (default false). */
  normFirst?: boolean;
  dtype?: DType;
  device?: string;
}

const LAYER_KEYS = ['dimFeedforward', 'dropout', 'activation', 'layerNormEps', 'batchFirst', 'normFirst', 'dtype', 'device'];

interface Resolved {
  dimFeedforward: number;
  dropout: number;
  activation: TransformerActivation;
  layerNormEps: number;
  batchFirst: boolean;
  normFirst: boolean;
  dtype?: DType;
  device?: string;
}

function resolve(op: string, options: TransformerLayerOptions): Resolved {
  const o = checkOptions(op, options, LAYER_KEYS);
  const act = o.activation ?? 'relu';
  if (typeof act !== 'function') checkChoice(op, 'activation', act, ['relu', 'gelu'] as const);
  return {
    dimFeedforward: checkInt(op, 'dimFeedforward', o.dimFeedforward ?? 2048, 1),
    dropout: checkNumber(op, 'dropout', o.dropout ?? 0.1, { min: 0, max: 1 }),
    activation: act,
    layerNormEps: checkNumber(op, 'layerNormEps', o.layerNormEps ?? 1e-5, { min: 0 }),
    batchFirst: checkBool(op, 'batchFirst', o.batchFirst ?? false),
    normFirst: checkBool(op, 'normFirst', o.normFirst ?? false),
    dtype: o.dtype,
    device: o.device,
  };
}

/** Builds the sublayers both layer kinds share, each with the layer's settings. */
function sublayers(dModel: number, nhead: number, c: Resolved) {
  const t = { dtype: c.dtype, device: c.device };
  return {
    attention: () => new MultiheadAttention(dModel, nhead, { dropout: c.dropout, batchFirst: c.batchFirst, ...t }),
    linear1: () => new Linear(dModel, c.dimFeedforward, t),
    linear2: () => new Linear(c.dimFeedforward, dModel, t),
    norm: () => new LayerNorm(dModel, { eps: c.layerNormEps, ...t }),
    dropout: () => new Dropout(c.dropout),
  };
}

interface FeedForwardParts {
  linear1: Linear;
  dropout: Dropout;
  linear2: Linear;
  readonly config: Resolved;
}

/**
 * The feed-forward block: out(linear2(dropout(activation(linear1(x))))). A named activation runs
 * fused into linear1's bias add (one pass over the hidden activations, forward and backward).
 */
function feedForward(l: FeedForwardParts, out: Dropout, x: Tensor): Tensor {
  const act = l.config.activation;
  const hidden = typeof act === 'function' ? act(l.linear1.forward(x)) : linear(x, l.linear1.weight, l.linear1.bias, { activation: act });
  return out.forward(l.linear2.forward(l.dropout.forward(hidden)));
}

/** One attention block without weights, followed by its dropout. */
function attend(
  attn: MultiheadAttention,
  out: Dropout,
  q: Tensor,
  kv: Tensor,
  mask: Tensor | null | undefined,
  keyPaddingMask: Tensor | null | undefined,
  isCausal?: boolean,
): Tensor {
  const [y] = attn.forward(q, kv, kv, { attnMask: mask, isCausal, keyPaddingMask, needWeights: false });
  return out.forward(y);
}

/** A residual sublayer: x + f(norm(x)) when normFirst, else norm(x + f(x)). */
function residual(normFirst: boolean, norm: LayerNorm, x: Tensor, f: (x: Tensor) => Tensor): Tensor {
  return normFirst ? x.add(f(norm.forward(x))) : norm.forward(x.add(f(x)));
}

/**
 * The options of an encoder's forward, named as PyTorch's keyword arguments: the layer's
 * `src_mask` is `srcMask`, the stack's `mask` is `mask`; either name works on both.
 */
export interface EncoderForwardOptions {
  /** Self-attention mask ([L, L] or [N·heads, L, L]; true or -inf where blocked); PyTorch's `src_mask`. */
  srcMask?: Tensor | null;
  /** The same as srcMask, as PyTorch's TransformerEncoder.forward names it. */
  mask?: Tensor | null;
  /** [N, L]: true where a position is padding. */
  srcKeyPaddingMask?: Tensor | null;
  /** Shorthand for a causal mask (PyTorch's is_causal with a matching mask). */
  isCausal?: boolean;
}

export class TransformerEncoderLayer extends Module {
  self_attn: MultiheadAttention;
  linear1: Linear;
  dropout: Dropout;
  linear2: Linear;
  norm1: LayerNorm;
  norm2: LayerNorm;
  dropout1: Dropout;
  dropout2: Dropout;
  readonly config: Resolved;

  constructor(
    readonly dModel: number,
    readonly nhead: number,
    options: TransformerLayerOptions = {},
  ) {
    super();
    this.config = resolve('TransformerEncoderLayer', options);
    const make = sublayers(dModel, nhead, this.config);
    this.self_attn = make.attention();
    this.linear1 = make.linear1();
    this.dropout = make.dropout();
    this.linear2 = make.linear2();
    this.norm1 = make.norm();
    this.norm2 = make.norm();
    this.dropout1 = make.dropout();
    this.dropout2 = make.dropout();
  }

  forward(src: Tensor, options: EncoderForwardOptions = {}): Tensor {
    const o = checkOptions('TransformerEncoderLayer', options, ['srcMask', 'mask', 'srcKeyPaddingMask', 'isCausal']);
    if (o.srcMask != null && o.mask != null)
      throw argError('TransformerEncoderLayer', 'srcMask and mask are the same option (PyTorch names it either way); give one');
    const mask = o.srcMask ?? o.mask;
    const sa = (x: Tensor) => attend(this.self_attn, this.dropout1, x, x, mask, o.srcKeyPaddingMask, o.isCausal);
    const ff = (x: Tensor) => feedForward(this, this.dropout2, x);
    const nf = this.config.normFirst;
    return residual(nf, this.norm2, residual(nf, this.norm1, src, sa), ff);
  }

  /** A new layer with the same settings and a copy of these weights (what PyTorch's stacks deep-copy). */
  clone(): TransformerEncoderLayer {
    const c = new TransformerEncoderLayer(this.dModel, this.nhead, this.config);
    c.loadStateDict(this.stateDict());
    return c;
  }
}

export interface DecoderForwardOptions {
  tgtMask?: Tensor | null;
  memoryMask?: Tensor | null;
  tgtKeyPaddingMask?: Tensor | null;
  memoryKeyPaddingMask?: Tensor | null;
  /** Shorthand for a causal tgtMask. */
  tgtIsCausal?: boolean;
  /** Shorthand for a causal memoryMask (target position i sees memory positions ≤ i). */
  memoryIsCausal?: boolean;
}

const DECODER_KEYS = ['tgtMask', 'memoryMask', 'tgtKeyPaddingMask', 'memoryKeyPaddingMask', 'tgtIsCausal', 'memoryIsCausal'];

export class TransformerDecoderLayer extends Module {
  self_attn: MultiheadAttention;
  multihead_attn: MultiheadAttention;
  linear1: Linear;
  dropout: Dropout;
  linear2: Linear;
  norm1: LayerNorm;
  norm2: LayerNorm;
  norm3: LayerNorm;
  dropout1: Dropout;
  dropout2: Dropout;
  dropout3: Dropout;
  readonly config: Resolved;

  constructor(
    readonly dModel: number,
    readonly nhead: number,
    options: TransformerLayerOptions = {},
  ) {
    super();
    this.config = resolve('TransformerDecoderLayer', options);
    const make = sublayers(dModel, nhead, this.config);
    this.self_attn = make.attention();
    this.multihead_attn = make.attention();
    this.linear1 = make.linear1();
    this.dropout = make.dropout();
    this.linear2 = make.linear2();
    this.norm1 = make.norm();
    this.norm2 = make.norm();
    this.norm3 = make.norm();
    this.dropout1 = make.dropout();
    this.dropout2 = make.dropout();
    this.dropout3 = make.dropout();
  }

  forward(tgt: Tensor, memory: Tensor, options: DecoderForwardOptions = {}): Tensor {
    const o = checkOptions('TransformerDecoderLayer', options, DECODER_KEYS);
    const sa = (x: Tensor) => attend(this.self_attn, this.dropout1, x, x, o.tgtMask, o.tgtKeyPaddingMask, o.tgtIsCausal);
    const mha = (x: Tensor) =>
      attend(this.multihead_attn, this.dropout2, x, memory, o.memoryMask, o.memoryKeyPaddingMask, o.memoryIsCausal);
    const ff = (x: Tensor) => feedForward(this, this.dropout3, x);
    const nf = this.config.normFirst;
    const x = residual(nf, this.norm2, residual(nf, this.norm1, tgt, sa), mha);
    return residual(nf, this.norm3, x, ff);
  }

  clone(): TransformerDecoderLayer {
    const c = new TransformerDecoderLayer(this.dModel, this.nhead, this.config);
    c.loadStateDict(this.stateDict());
    return c;
  }
}

/** A bool [T, T] mask, true above the diagonal (blocked): PyTorch's generate_square_subsequent_mask as bool. */
export function causalMask(t: number, device?: string): Tensor {
  const op = 'causalMask';
  return tidy(() => {
    const pos = arange(checkInt(op, 't', t), undefined, 1, { device: checkDevice(op, device) });
    return pos.unsqueeze(1).lt(pos); // row i blocks the columns j > i
  });
}

function stackOf<L extends TransformerEncoderLayer | TransformerDecoderLayer>(op: string, layer: L, numLayers: number): L[] {
  if (!(layer instanceof TransformerEncoderLayer || layer instanceof TransformerDecoderLayer))
    throw argError(op, `layer must be a TransformerEncoderLayer or TransformerDecoderLayer, got ${describe(layer)}`);
  checkInt(op, 'numLayers', numLayers, 1);
  return Array.from({ length: numLayers }, () => layer.clone() as L);
}

/** numLayers copies of `encoderLayer` (each starting from its weights, as PyTorch deep-copies), then an optional norm. */
export class TransformerEncoder extends Module {
  layers: ModuleList;
  norm: Module | null;

  constructor(encoderLayer: TransformerEncoderLayer, numLayers: number, norm: LayerNorm | null = null) {
    super();
    this.layers = new ModuleList(stackOf('TransformerEncoder', encoderLayer, numLayers));
    this.norm = norm;
  }

  forward(src: Tensor, options: EncoderForwardOptions = {}): Tensor {
    let x = src;
    for (const layer of this.layers) x = (layer as TransformerEncoderLayer).forward(x, options);
    return this.norm ? (this.norm as LayerNorm).forward(x) : x;
  }
}

export class TransformerDecoder extends Module {
  layers: ModuleList;
  norm: Module | null;

  constructor(decoderLayer: TransformerDecoderLayer, numLayers: number, norm: LayerNorm | null = null) {
    super();
    this.layers = new ModuleList(stackOf('TransformerDecoder', decoderLayer, numLayers));
    this.norm = norm;
  }

  forward(tgt: Tensor, memory: Tensor, options: DecoderForwardOptions = {}): Tensor {
    let x = tgt;
    for (const layer of this.layers) x = (layer as TransformerDecoderLayer).forward(x, memory, options);
    return this.norm ? (this.norm as LayerNorm).forward(x) : x;
  }
}
