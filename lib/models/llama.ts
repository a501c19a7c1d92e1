/**
 * Llama (transformers' LlamaForCausalLM): RMSNorm, rotary position embeddings (rope_theta; linear or
 * Llama 3 rope_scaling), SwiGLU MLP, grouped-query attention (num_key_value_heads), lm_head tied to
 * the embedding or not. Parameter names are transformers' (`model.layers.0.self_attn.q_proj.weight`).
 */
import type { Tensor } from '../tensor';
import { Module } from '../nn/module';
import { ModuleList } from '../nn/container';
import { Linear } from '../nn/linear';
import { Embedding } from '../nn/embedding';
import { RMSNorm } from '../nn/rms_norm';
import { normal_, ones_, zeros_ } from '../nn/init';
import { noGrad } from '../dispatch/grad_mode';
import { checkOptions, flockError } from '../errors';
import { type LlamaConfig, type LlamaSettings, llamaSettings } from './config';
import { CausalLM } from './causal_lm';
import { type StepContext, attend } from './step';
import { applyRotary, applyRotaryMatrix, inverseFrequencies, rotaryMatrices, rotaryTables } from './rope';
import { type PretrainedOptions, loadPretrained } from './pretrained';
import type { ModelOptions } from './gpt2';

/** Rotary embeddings for this step: cos and sin tables, or (one token per row) one matrix per row. */
type Rotation = { cos: Tensor; sin: Tensor } | { matrix: Tensor };

const rotate = (x: Tensor, rot: Rotation) => ('matrix' in rot ? applyRotaryMatrix(x, rot.matrix) : applyRotary(x, rot.cos, rot.sin));

class LlamaAttention extends Module {
  q_proj: Linear;
  k_proj: Linear;
  v_proj: Linear;
  o_proj: Linear;

  constructor(
    readonly s: LlamaSettings,
    readonly layer: number,
    o: ModelOptions,
  ) {
    super();
    const bias = s.attentionBias;
    this.q_proj = new Linear(s.hidden, s.heads * s.headDim, { ...o, bias });
    this.k_proj = new Linear(s.hidden, s.kvHeads * s.headDim, { ...o, bias });
    this.v_proj = new Linear(s.hidden, s.kvHeads * s.headDim, { ...o, bias });
    this.o_proj = new Linear(s.heads * s.headDim, s.hidden, { ...o, bias });
  }

  forward(x: Tensor, rot: Rotation, ctx: StepContext): Tensor {
    const { heads, kvHeads, headDim } = this.s;
    const [b, t] = x.shape;
    // One new token: [b, 1, h, d] is already [b, h, 1, d] (a view, not a copy).
    const split = (y: Tensor, h: number) => (t === 1 ? y.reshape([b, h, 1, headDim]) : y.reshape([b, t, h, headDim]).permute([0, 2, 1, 3]));
    const q = rotate(split(this.q_proj.forward(x), heads), rot);
    const k = rotate(split(this.k_proj.forward(x), kvHeads), rot);
    const v = split(this.v_proj.forward(x), kvHeads);
    const [keys, values] = ctx.cache ? ctx.cache.update(this.layer, k, v) : [k, v];
    return this.o_proj.forward(attend(q, keys, values, ctx, 1 / Math.sqrt(headDim)));
  }
}

class LlamaMLP extends Module {
  gate_proj: Linear;
  up_proj: Linear;
  down_proj: Linear;

  constructor(s: LlamaSettings, o: ModelOptions) {
    super();
    const bias = s.mlpBias;
    this.gate_proj = new Linear(s.hidden, s.intermediate, { ...o, bias });
    this.up_proj = new Linear(s.hidden, s.intermediate, { ...o, bias });
    this.down_proj = new Linear(s.intermediate, s.hidden, { ...o, bias });
  }

  forward(x: Tensor): Tensor {
    return this.down_proj.forward(this.gate_proj.forward(x).silu().mul(this.up_proj.forward(x)));
  }
}

class LlamaDecoderLayer extends Module {
  input_layernorm: RMSNorm;
  self_attn: LlamaAttention;
  post_attention_layernorm: RMSNorm;
  mlp: LlamaMLP;

  constructor(s: LlamaSettings, layer: number, o: ModelOptions) {
    super();
    this.input_layernorm = new RMSNorm(s.hidden, { eps: s.eps, ...o });
    this.self_attn = new LlamaAttention(s, layer, o);
    this.post_attention_layernorm = new RMSNorm(s.hidden, { eps: s.eps, ...o });
    this.mlp = new LlamaMLP(s, o);
  }

  forward(x: Tensor, rot: Rotation, ctx: StepContext): Tensor {
    const h = x.add(this.self_attn.forward(this.input_layernorm.forward(x), rot, ctx));
    return h.add(this.mlp.forward(this.post_attention_layernorm.forward(h)));
  }
}

/** transformers' LlamaModel: embedding, decoder layers, final RMSNorm. */
class LlamaModel extends Module {
  embed_tokens: Embedding;
  layers: ModuleList;
  norm: RMSNorm;
  readonly #inv: number[];

  constructor(s: LlamaSettings, o: ModelOptions) {
    super();
    this.embed_tokens = new Embedding(s.vocab, s.hidden, o);
    this.layers = new ModuleList(Array.from({ length: s.layers }, (_, i) => new LlamaDecoderLayer(s, i, o)));
    this.norm = new RMSNorm(s.hidden, { eps: s.eps, ...o });
    this.#inv = inverseFrequencies(s.headDim, s.theta, s.rope);
  }

  forward(ids: Tensor, ctx: StepContext): Tensor {
    let x = this.embed_tokens.forward(ids);
    const rot = ids.shape[1] === 1 ? { matrix: rotaryMatrices(ctx.positions, this.#inv, x) } : rotaryTables(ctx.positions, this.#inv, x);
    for (const layer of this.layers.children()) x = (layer as LlamaDecoderLayer).forward(x, rot, ctx);
    return this.norm.forward(x);
  }
}

/**
 * Llama with transformers' config.json fields. `new Llama(config)` initialises as transformers does
 * (N(0, initializer_range) weights, zero biases, norms at one); {@link Llama.fromPretrained} loads a
 * checkpoint directory.
 */
export class Llama extends CausalLM {
  model: LlamaModel;
  lm_head: Linear;

  readonly config: LlamaConfig;
  readonly vocabSize: number;
  readonly maxPositions = Number.POSITIVE_INFINITY;
  readonly cacheShape: { layers: number; kvHeads: number; headDim: number };
  readonly #settings: LlamaSettings;

  constructor(config: LlamaConfig, options: ModelOptions = {}) {
    super();
    const o = checkOptions('Llama', options, ['dtype', 'device']);
    const s = llamaSettings(config);
    this.config = { ...config };
    this.#settings = s;
    this.vocabSize = s.vocab;
    this.cacheShape = { layers: s.layers, kvHeads: s.kvHeads, headDim: s.headDim };
    this.model = new LlamaModel(s, o);
    this.lm_head = new Linear(s.hidden, s.vocab, { ...o, bias: false });
    if (s.tied) {
      const untied = this.lm_head.weight;
      this.lm_head.weight = this.model.embed_tokens.weight;
      untied.dispose();
    }
    const std = typeof config.initializer_range === 'number' ? config.initializer_range : 0.02;
    noGrad(() => {
      for (const [name, p] of this.namedParameters()) {
        if (name.endsWith('bias')) zeros_(p);
        else if (/(norm|layernorm)\.weight$/.test(name)) ones_(p);
        else normal_(p, 0, std);
      }
    });
  }

  /**
   * Loads a Hugging Face Llama-family directory: config.json and model.safetensors (or shards listed
   * in model.safetensors.index.json), tensor by tensor onto `device`, cast to `dtype` (default f32).
   */
  static async fromPretrained(dir: string, options: PretrainedOptions = {}): Promise<Llama> {
    return loadPretrained(dir, options, 'Llama.fromPretrained', (config, o) => {
      if (config.model_type !== undefined && !['llama', 'mistral'].includes(String(config.model_type)))
        throw flockError('ERR_ARG', 'Llama.fromPretrained', `${dir}/config.json is a '${String(config.model_type)}' model, not llama`);
      return new Llama(config as LlamaConfig, o);
    });
  }

  step(ids: Tensor, ctx: StepContext): Tensor {
    let h = this.model.forward(ids, ctx);
    if (ctx.lastOnly) h = h.narrow(1, h.shape[1] - 1, 1);
    if (ctx.cache) ctx.cache.advance(ids.shape[1]);
    return this.lm_head.forward(h);
  }

  hfNames(): { name: string; hf: string; transposed: boolean }[] {
    return [...this.namedParameters()].map(([name]) => ({ name, hf: name, transposed: false }));
  }

  override extraRepr(): string {
    const s = this.#settings;
    return `num_hidden_layers=${s.layers}, hidden_size=${s.hidden}, num_attention_heads=${s.heads}, num_key_value_heads=${s.kvHeads}, vocab_size=${s.vocab}`;
  }
}
