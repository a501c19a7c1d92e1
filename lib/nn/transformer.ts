/**
 * Transformer encoder and decoder layers and stacks with PyTorch's semantics and state-dict names
 * (self_attn, multihead_attn, linear1, linear2, norm1..3; layers.<i>.… and norm in the stacks).
 * normFirst selects pre-norm (x + f(norm(x))) instead of post-norm (norm(x + f(x))).
 */
import type { Tensor } from '../tensor';
import type { DType } from '../dtype';
import { tensor } from '../ops/creation';
import { Module } from './module';
import { ModuleList } from './container';
import { Linear } from './linear';
import { Dropout } from './dropout';
import { LayerNorm } from './norm';
import { MultiheadAttention } from './attention';
import { argError, checkOptions, describe } from '../errors';
import { checkBool, checkChoice, checkInt, checkNumber } from '../validate';

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

function activate(act: TransformerActivation, x: Tensor): Tensor {
  return act === 'relu' ? x.relu() : act === 'gelu' ? x.gelu() : act(x);
}

export interface EncoderForwardOptions {
  /** Self-attention mask ([L, L] or [N·heads, L, L]; true or -inf where blocked). */
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
    const c = resolve('TransformerEncoderLayer', options);
    this.config = c;
    const t = { dtype: c.dtype, device: c.device };
    this.self_attn = new MultiheadAttention(dModel, nhead, { dropout: c.dropout, batchFirst: c.batchFirst, ...t });
    this.linear1 = new Linear(dModel, c.dimFeedforward, t);
    this.dropout = new Dropout(c.dropout);
    this.linear2 = new Linear(c.dimFeedforward, dModel, t);
    this.norm1 = new LayerNorm(dModel, { eps: c.layerNormEps, ...t });
    this.norm2 = new LayerNorm(dModel, { eps: c.layerNormEps, ...t });
    this.dropout1 = new Dropout(c.dropout);
    this.dropout2 = new Dropout(c.dropout);
  }

  forward(src: Tensor, options: EncoderForwardOptions = {}): Tensor {
    const o = checkOptions('TransformerEncoderLayer', options, ['mask', 'srcKeyPaddingMask', 'isCausal']);
    const sa = (x: Tensor) => {
      const [y] = this.self_attn.forward(x, x, x, {
        attnMask: o.mask,
        isCausal: o.isCausal,
        keyPaddingMask: o.srcKeyPaddingMask,
        needWeights: false,
      });
      return this.dropout1.forward(y);
    };
    const ff = (x: Tensor) =>
      this.dropout2.forward(this.linear2.forward(this.dropout.forward(activate(this.config.activation, this.linear1.forward(x)))));
    if (this.config.normFirst) {
      const x = src.add(sa(this.norm1.forward(src)));
      return x.add(ff(this.norm2.forward(x)));
    }
    const x = this.norm1.forward(src.add(sa(src)));
    return this.norm2.forward(x.add(ff(x)));
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
}

const DECODER_KEYS = ['tgtMask', 'memoryMask', 'tgtKeyPaddingMask', 'memoryKeyPaddingMask', 'tgtIsCausal'];

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
    const c = resolve('TransformerDecoderLayer', options);
    this.config = c;
    const t = { dtype: c.dtype, device: c.device };
    this.self_attn = new MultiheadAttention(dModel, nhead, { dropout: c.dropout, batchFirst: c.batchFirst, ...t });
    this.multihead_attn = new MultiheadAttention(dModel, nhead, { dropout: c.dropout, batchFirst: c.batchFirst, ...t });
    this.linear1 = new Linear(dModel, c.dimFeedforward, t);
    this.dropout = new Dropout(c.dropout);
    this.linear2 = new Linear(c.dimFeedforward, dModel, t);
    this.norm1 = new LayerNorm(dModel, { eps: c.layerNormEps, ...t });
    this.norm2 = new LayerNorm(dModel, { eps: c.layerNormEps, ...t });
    this.norm3 = new LayerNorm(dModel, { eps: c.layerNormEps, ...t });
    this.dropout1 = new Dropout(c.dropout);
    this.dropout2 = new Dropout(c.dropout);
    this.dropout3 = new Dropout(c.dropout);
  }

  forward(tgt: Tensor, memory: Tensor, options: DecoderForwardOptions = {}): Tensor {
    const o = checkOptions('TransformerDecoderLayer', options, DECODER_KEYS);
    const sa = (x: Tensor) => {
      const [y] = this.self_attn.forward(x, x, x, {
        attnMask: o.tgtMask,
        isCausal: o.tgtIsCausal,
        keyPaddingMask: o.tgtKeyPaddingMask,
        needWeights: false,
      });
      return this.dropout1.forward(y);
    };
    const mha = (x: Tensor) => {
      const [y] = this.multihead_attn.forward(x, memory, memory, {
        attnMask: o.memoryMask,
        keyPaddingMask: o.memoryKeyPaddingMask,
        needWeights: false,
      });
      return this.dropout2.forward(y);
    };
    const ff = (x: Tensor) =>
      this.dropout3.forward(this.linear2.forward(this.dropout.forward(activate(this.config.activation, this.linear1.forward(x)))));
    if (this.config.normFirst) {
      let x = tgt.add(sa(this.norm1.forward(tgt)));
      x = x.add(mha(this.norm2.forward(x)));
      return x.add(ff(this.norm3.forward(x)));
    }
    let x = this.norm1.forward(tgt.add(sa(tgt)));
    x = this.norm2.forward(x.add(mha(x)));
    return this.norm3.forward(x.add(ff(x)));
  }

  clone(): TransformerDecoderLayer {
    const c = new TransformerDecoderLayer(this.dModel, this.nhead, this.config);
    c.loadStateDict(this.stateDict());
    return c;
  }
}

/** A bool [T, T] mask, true above the diagonal (blocked): PyTorch's generate_square_subsequent_mask as bool. */
export function causalMask(t: number, device?: string): Tensor {
  const vals = Array.from({ length: t * t }, (_, e) => e % t > Math.floor(e / t));
  return tensor(Uint8Array.from(vals, Number), { dtype: 'bool', shape: [t, t], device });
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
