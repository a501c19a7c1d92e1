/**
 * Model configurations with Hugging Face's config.json field names (snake_case, as in the file), so
 * a config read from a checkpoint is used as is and written back unchanged. Fields this library does
 * not use (dropouts, initializer_range, token ids, ...) are kept and round-trip through
 * savePretrained; fields it uses are validated, and values it cannot honour throw ERR_ARG.
 */
import { argError, describe, flockError } from '../errors';
import { checkBool, checkInt, checkNumber } from '../validate';

/** GPT-2's config.json (transformers' GPT2Config); every field but the sizes is optional. */
export interface GPT2Config {
  model_type?: 'gpt2';
  vocab_size: number;
  /** Learned positions: the longest sequence (prompt + generated tokens). */
  n_positions: number;
  n_embd: number;
  n_layer: number;
  n_head: number;
  /** MLP width (default 4 · n_embd). */
  n_inner?: number | null;
  /** 'gelu_new' (default; the tanh approximation), 'gelu_pytorch_tanh', 'gelu', 'relu', 'silu'. */
  activation_function?: GPT2Activation;
  layer_norm_epsilon?: number;
  /** Divide attention scores by √head_dim (default true). */
  scale_attn_weights?: boolean;
  /** Further divide layer i's scores by i + 1 (default false). */
  scale_attn_by_inverse_layer_idx?: boolean;
  /** GPT-2 always ties lm_head to wte; false is refused. */
  tie_word_embeddings?: boolean;
  bos_token_id?: number | null;
  eos_token_id?: number | number[] | null;
  pad_token_id?: number | null;
  [field: string]: unknown;
}

export type GPT2Activation = 'gelu_new' | 'gelu_pytorch_tanh' | 'gelu' | 'relu' | 'silu' | 'swish';

/** rope_scaling as Llama checkpoints give it: `rope_type` (or the older `type`) and its factors. */
export interface RopeScaling {
  rope_type?: 'default' | 'linear' | 'llama3';
  type?: 'default' | 'linear' | 'llama3';
  factor?: number;
  low_freq_factor?: number;
  high_freq_factor?: number;
  original_max_position_embeddings?: number;
  [field: string]: unknown;
}

/** Llama's config.json (transformers' LlamaConfig); also fits Mistral-style checkpoints without sliding windows. */
export interface LlamaConfig {
  model_type?: string;
  vocab_size: number;
  hidden_size: number;
  intermediate_size: number;
  num_hidden_layers: number;
  num_attention_heads: number;
  /** Grouped-query attention: key/value heads, dividing num_attention_heads (default num_attention_heads). */
  num_key_value_heads?: number;
  /** Per-head size (default hidden_size / num_attention_heads). */
  head_dim?: number;
  rms_norm_eps?: number;
  /** Rotary base (default 10000). */
  rope_theta?: number;
  /** null, { rope_type: 'linear', factor } or { rope_type: 'llama3', factor, low_freq_factor, high_freq_factor, original_max_position_embeddings }. */
  rope_scaling?: RopeScaling | null;
  max_position_embeddings?: number;
  /** Share embed_tokens with lm_head (default false). */
  tie_word_embeddings?: boolean;
  /** Only 'silu' (SwiGLU). */
  hidden_act?: string;
  /** Biases on q/k/v/o projections (default false). */
  attention_bias?: boolean;
  /** Biases on the MLP projections (default false). */
  mlp_bias?: boolean;
  bos_token_id?: number | null;
  eos_token_id?: number | number[] | null;
  pad_token_id?: number | null;
  [field: string]: unknown;
}

function object(op: string, cfg: unknown): Record<string, unknown> {
  if (cfg === null || typeof cfg !== 'object' || Array.isArray(cfg)) throw argError(op, `config must be an object, got ${describe(cfg)}`);
  return cfg as Record<string, unknown>;
}

const optional = <T>(v: unknown, check: (v: unknown) => T, dflt: T): T => (v === undefined || v === null ? dflt : check(v));

/** The validated GPT-2 settings the model uses; the config object itself is kept as given. */
export interface GPT2Settings {
  vocab: number;
  positions: number;
  embd: number;
  layers: number;
  heads: number;
  inner: number;
  activation: GPT2Activation;
  eps: number;
  scaleAttn: boolean;
  scaleByLayer: boolean;
}

export function gpt2Settings(config: GPT2Config): GPT2Settings {
  const op = 'GPT2';
  const c = object(op, config);
  if (c.model_type !== undefined && c.model_type !== 'gpt2')
    throw flockError('ERR_ARG', op, `config.model_type must be 'gpt2', got ${describe(c.model_type)}`);
  const embd = checkInt(op, 'config.n_embd', c.n_embd, 1);
  const heads = checkInt(op, 'config.n_head', c.n_head, 1);
  if (embd % heads !== 0) throw flockError('ERR_ARG', op, `config.n_embd ${embd} must be divisible by config.n_head ${heads}`);
  const activation = optional(c.activation_function, (v) => v, 'gelu_new') as GPT2Activation;
  if (!['gelu_new', 'gelu_pytorch_tanh', 'gelu', 'relu', 'silu', 'swish'].includes(activation))
    throw flockError(
      'ERR_ARG',
      op,
      `config.activation_function ${describe(activation)} is not supported (gelu_new, gelu_pytorch_tanh, gelu, relu, silu, swish)`,
    );
  if (c.tie_word_embeddings === false)
    throw flockError('ERR_ARG', op, 'config.tie_word_embeddings false is not supported: GPT-2 ties lm_head to wte');
  if (c.add_cross_attention === true) throw flockError('ERR_ARG', op, 'config.add_cross_attention is not supported');
  if (c.reorder_and_upcast_attn === true) throw flockError('ERR_ARG', op, 'config.reorder_and_upcast_attn is not supported');
  return {
    vocab: checkInt(op, 'config.vocab_size', c.vocab_size, 1),
    positions: checkInt(op, 'config.n_positions', c.n_positions, 1),
    embd,
    layers: checkInt(op, 'config.n_layer', c.n_layer, 0),
    heads,
    inner: optional(c.n_inner, (v) => checkInt(op, 'config.n_inner', v, 1), 4 * embd),
    activation,
    eps: optional(c.layer_norm_epsilon, (v) => checkNumber(op, 'config.layer_norm_epsilon', v, { min: 0 }), 1e-5),
    scaleAttn: optional(c.scale_attn_weights, (v) => checkBool(op, 'config.scale_attn_weights', v), true),
    scaleByLayer: optional(c.scale_attn_by_inverse_layer_idx, (v) => checkBool(op, 'config.scale_attn_by_inverse_layer_idx', v), false),
  };
}

/** How rotary frequencies are scaled: none, linear (positions / factor), or Llama 3's by wavelength. */
export type RopeSettings =
  | { kind: 'default' }
  | { kind: 'linear'; factor: number }
  | { kind: 'llama3'; factor: number; low: number; high: number; original: number };

export interface LlamaSettings {
  vocab: number;
  hidden: number;
  intermediate: number;
  layers: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  eps: number;
  theta: number;
  rope: RopeSettings;
  maxPositions: number;
  tied: boolean;
  attentionBias: boolean;
  mlpBias: boolean;
}

function ropeSettings(op: string, rs: unknown): RopeSettings {
  if (rs === undefined || rs === null) return { kind: 'default' };
  const r = object(op, rs);
  const kind = r.rope_type ?? r.type ?? 'default';
  const factor = () => checkNumber(op, 'config.rope_scaling.factor', r.factor, { min: 1 });
  if (kind === 'default') return { kind };
  if (kind === 'linear') return { kind, factor: factor() };
  if (kind === 'llama3') {
    const low = checkNumber(op, 'config.rope_scaling.low_freq_factor', r.low_freq_factor, { above: 0 });
    const high = checkNumber(op, 'config.rope_scaling.high_freq_factor', r.high_freq_factor, { above: low });
    const original = checkInt(op, 'config.rope_scaling.original_max_position_embeddings', r.original_max_position_embeddings, 1);
    return { kind, factor: factor(), low, high, original };
  }
  throw flockError(
    'ERR_ARG',
    op,
    `config.rope_scaling type ${describe(kind)} is not supported (supported: default, linear, llama3; dynamic, yarn and longrope are not)`,
  );
}

export function llamaSettings(config: LlamaConfig): LlamaSettings {
  const op = 'Llama';
  const c = object(op, config);
  const hidden = checkInt(op, 'config.hidden_size', c.hidden_size, 1);
  const heads = checkInt(op, 'config.num_attention_heads', c.num_attention_heads, 1);
  const kvHeads = optional(c.num_key_value_heads, (v) => checkInt(op, 'config.num_key_value_heads', v, 1), heads);
  if (heads % kvHeads !== 0)
    throw flockError('ERR_ARG', op, `config.num_attention_heads ${heads} must be a multiple of config.num_key_value_heads ${kvHeads}`);
  if (c.head_dim === undefined || c.head_dim === null) {
    if (hidden % heads !== 0)
      throw flockError(
        'ERR_ARG',
        op,
        `config.hidden_size ${hidden} must be divisible by config.num_attention_heads ${heads} (or give head_dim)`,
      );
  }
  const headDim = optional(c.head_dim, (v) => checkInt(op, 'config.head_dim', v, 2), hidden / heads);
  if (headDim % 2 !== 0) throw flockError('ERR_ARG', op, `the head size ${headDim} must be even for rotary embeddings`);
  const act = c.hidden_act ?? 'silu';
  if (act !== 'silu') throw flockError('ERR_ARG', op, `config.hidden_act ${describe(act)} is not supported (only 'silu', SwiGLU)`);
  if (c.sliding_window !== undefined && c.sliding_window !== null && c.use_sliding_window !== false)
    throw flockError('ERR_ARG', op, 'config.sliding_window is not supported');
  const rawTheta = c.rope_theta ?? 10000;
  return {
    vocab: checkInt(op, 'config.vocab_size', c.vocab_size, 1),
    hidden,
    intermediate: checkInt(op, 'config.intermediate_size', c.intermediate_size, 1),
    layers: checkInt(op, 'config.num_hidden_layers', c.num_hidden_layers, 0),
    heads,
    kvHeads,
    headDim,
    eps: optional(c.rms_norm_eps, (v) => checkNumber(op, 'config.rms_norm_eps', v, { min: 0 }), 1e-6),
    theta: checkNumber(op, 'config.rope_theta', rawTheta, { above: 0 }),
    rope: ropeSettings(op, c.rope_scaling),
    maxPositions: optional(c.max_position_embeddings, (v) => checkInt(op, 'config.max_position_embeddings', v, 1), 2048),
    tied: optional(c.tie_word_embeddings, (v) => checkBool(op, 'config.tie_word_embeddings', v), false),
    attentionBias: optional(c.attention_bias, (v) => checkBool(op, 'config.attention_bias', v), false),
    mlpBias: optional(c.mlp_bias, (v) => checkBool(op, 'config.mlp_bias', v), false),
  };
}

/** config.eos_token_id as a list (it may be one id, several, or absent). */
export function eosTokens(config: { eos_token_id?: number | number[] | null }): number[] {
  const e = config.eos_token_id;
  return e === undefined || e === null ? [] : Array.isArray(e) ? e : [e];
}
