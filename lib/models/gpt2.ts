/**
 * GPT-2 (transformers' GPT2LMHeadModel): learned positions, pre-norm blocks with LayerNorm, GELU
 * (tanh approximation, 'gelu_new'), lm_head tied to the token embedding. Parameter names are
 * transformers' (`transformer.h.0.attn.c_attn.weight`); its Conv1D layers are Linear layers here,
 * so their weights are the transpose of the checkpoint's [in, out] tensors (fromPretrained and
 * savePretrained transpose them).
 */
import type { Tensor } from '../tensor';
import { tensor } from '../ops/creation';
import { Module } from '../nn/module';
import { ModuleList } from '../nn/container';
import { Linear } from '../nn/linear';
import { Embedding } from '../nn/embedding';
import { LayerNorm } from '../nn/norm';
import { gelu } from '../ops/elementwise';
import { canPackAttention, packedSelfAttention } from '../nn/functional/attention_packed';
import { linear } from '../nn/functional/basic';
import { normal_, ones_, zeros_ } from '../nn/init';
import { noGrad } from '../dispatch/grad_mode';
import type { DType } from '../dtype';
import { checkOptions, flockError } from '../errors';
import { type GPT2Config, type GPT2Settings, gpt2Settings } from './config';
import { CausalLM } from './causal_lm';
import { type StepContext, attend } from './step';
import { geluTanh } from './gelu_tanh';
import { type PretrainedOptions, loadPretrained } from './pretrained';

export interface ModelOptions {
  dtype?: DType;
  device?: string;
}

class GPT2Attention extends Module {
  c_attn: Linear;
  c_proj: Linear;

  constructor(
    readonly s: GPT2Settings,
    readonly layer: number,
    o: ModelOptions,
  ) {
    super();
    this.c_attn = new Linear(s.embd, 3 * s.embd, o);
    this.c_proj = new Linear(s.embd, s.embd, o);
  }

  forward(x: Tensor, ctx: StepContext): Tensor {
    const { embd, heads } = this.s;
    const [b, t] = x.shape;
    const d = embd / heads;
    const qkv = this.c_attn.forward(x);
    const fresh = !ctx.cache || ctx.cache.length === 0;
    if (t > 1 && fresh && this.s.scaleAttn && !this.s.scaleByLayer && canPackAttention(qkv)) {
      // A whole sequence (training, a prompt, decoding without a cache): the fused CPU kernel reads
      // the heads straight from the packed projection, as MultiheadAttention does.
      if (ctx.cache) {
        const [k, v] = qkv
          .chunk(3, -1)
          .slice(1)
          .map((y) => y.reshape([b, t, heads, d]).permute([0, 2, 1, 3]));
        ctx.cache.update(this.layer, k, v);
      }
      const mask = ctx.mask && ctx.mask.device !== qkv.device ? ctx.mask.to(qkv.device) : ctx.mask;
      return this.c_proj.forward(packedSelfAttention(qkv, heads, true, { attnMask: mask, isCausal: ctx.causal }));
    }
    // One new token: [b, 1, 3, H, d] is already [b, 3, H, 1, d], so the heads are views, not copies.
    const [q, k, v] =
      t === 1 ? qkv.reshape([b, 3, heads, 1, d]).unbind(1) : qkv.chunk(3, -1).map((y) => y.reshape([b, t, heads, d]).permute([0, 2, 1, 3]));
    const [keys, values] = ctx.cache ? ctx.cache.update(this.layer, k, v) : [k, v];
    let scale = this.s.scaleAttn ? 1 / Math.sqrt(d) : 1;
    if (this.s.scaleByLayer) scale /= this.layer + 1;
    return this.c_proj.forward(attend(q, keys, values, ctx, scale));
  }
}

/** Up to this many rows (decoding a batch) the tanh GELU runs fused with the bias. */
const FUSED_TANH_ROWS = 16;

class GPT2MLP extends Module {
  c_fc: Linear;
  c_proj: Linear;

  constructor(
    readonly s: GPT2Settings,
    o: ModelOptions,
  ) {
    super();
    this.c_fc = new Linear(s.embd, s.inner, o);
    this.c_proj = new Linear(s.inner, s.embd, o);
  }

  forward(x: Tensor): Tensor {
    const act = this.s.activation;
    const tanh = act === 'gelu_new' || act === 'gelu_pytorch_tanh';
    // The plain layer runs bias and activation as one fused pass (a separate activation pass over
    // the [t, 4·embd] output cost more than its matmul); a replaced layer (LoRA) runs its own
    // forward. The tanh GELU is fused only for a few rows (decoding): over more, the fused pass
    // (tanh, a scalar kernel) and above all its backward cost more than the sigmoid form.
    const few = x.numel() / x.shape[x.ndim - 1] <= FUSED_TANH_ROWS;
    if (this.c_fc.constructor === Linear && (!tanh || few)) {
      const fused = tanh ? 'gelu_tanh' : act === 'swish' ? 'silu' : act;
      return this.c_proj.forward(linear(x, this.c_fc.weight, this.c_fc.bias, { activation: fused }));
    }
    const h = this.c_fc.forward(x);
    const a = tanh ? (few ? gelu(h, 'tanh') : geluTanh(h)) : act === 'gelu' ? gelu(h) : act === 'relu' ? h.relu() : h.silu();
    return this.c_proj.forward(a);
  }
}

class GPT2Block extends Module {
  ln_1: LayerNorm;
  attn: GPT2Attention;
  ln_2: LayerNorm;
  mlp: GPT2MLP;

  constructor(s: GPT2Settings, layer: number, o: ModelOptions) {
    super();
    this.ln_1 = new LayerNorm(s.embd, { eps: s.eps, ...o });
    this.attn = new GPT2Attention(s, layer, o);
    this.ln_2 = new LayerNorm(s.embd, { eps: s.eps, ...o });
    this.mlp = new GPT2MLP(s, o);
  }

  forward(x: Tensor, ctx: StepContext): Tensor {
    const h = x.add(this.attn.forward(this.ln_1.forward(x), ctx));
    return h.add(this.mlp.forward(this.ln_2.forward(h)));
  }
}

/** transformers' GPT2Model: embeddings, blocks, final LayerNorm. */
class GPT2Model extends Module {
  wte: Embedding;
  wpe: Embedding;
  h: ModuleList;
  ln_f: LayerNorm;

  constructor(s: GPT2Settings, o: ModelOptions) {
    super();
    this.wte = new Embedding(s.vocab, s.embd, o);
    this.wpe = new Embedding(s.positions, s.embd, o);
    this.h = new ModuleList(Array.from({ length: s.layers }, (_, i) => new GPT2Block(s, i, o)));
    this.ln_f = new LayerNorm(s.embd, { eps: s.eps, ...o });
  }

  forward(ids: Tensor, ctx: StepContext): Tensor {
    const pos = tensor(Int32Array.from(ctx.positions.flat()), { dtype: 'i64', shape: [ids.shape[0], ids.shape[1]], device: ids.device });
    let x = this.wte.forward(ids).add(this.wpe.forward(pos));
    for (const block of this.h.children()) x = (block as GPT2Block).forward(x, ctx);
    return this.ln_f.forward(x);
  }
}

/**
 * GPT-2 with transformers' config.json fields. `new GPT2(config)` initialises as transformers does
 * (N(0, 0.02) weights, zero biases, LayerNorms at identity); {@link GPT2.fromPretrained} loads a
 * checkpoint directory.
 */
export class GPT2 extends CausalLM {
  transformer: GPT2Model;
  lm_head: Linear;

  readonly config: GPT2Config;
  readonly vocabSize: number;
  readonly maxPositions: number;
  readonly cacheShape: { layers: number; kvHeads: number; headDim: number };
  readonly #settings: GPT2Settings;

  constructor(config: GPT2Config, options: ModelOptions = {}) {
    super();
    const o = checkOptions('GPT2', options, ['dtype', 'device']);
    const s = gpt2Settings(config);
    this.config = { ...config };
    this.#settings = s;
    this.vocabSize = s.vocab;
    this.maxPositions = s.positions;
    this.cacheShape = { layers: s.layers, kvHeads: s.heads, headDim: s.embd / s.heads };
    this.transformer = new GPT2Model(s, o);
    this.lm_head = new Linear(s.embd, s.vocab, { ...o, bias: false });
    // Tied: the head's own weight is replaced, and freed now rather than by the garbage collector.
    const untied = this.lm_head.weight;
    this.lm_head.weight = this.transformer.wte.weight;
    untied.dispose();
    const std = typeof config.initializer_range === 'number' ? config.initializer_range : 0.02;
    noGrad(() => {
      for (const [name, p] of this.namedParameters()) {
        if (name.endsWith('bias')) zeros_(p);
        else if (/\.ln_\w+\.weight$/.test(name)) ones_(p);
        else normal_(p, 0, std);
      }
    });
  }

  /**
   * Loads a Hugging Face GPT-2 directory: config.json and model.safetensors (or shards listed in
   * model.safetensors.index.json), tensor by tensor onto `device`, cast to `dtype` (default f32).
   */
  static async fromPretrained(dir: string, options: PretrainedOptions = {}): Promise<GPT2> {
    return loadPretrained(dir, options, 'GPT2.fromPretrained', (config, o) => {
      if (config.model_type !== undefined && config.model_type !== 'gpt2')
        throw flockError('ERR_ARG', 'GPT2.fromPretrained', `${dir}/config.json is a '${String(config.model_type)}' model, not gpt2`);
      return new GPT2(config as GPT2Config, o);
    });
  }

  step(ids: Tensor, ctx: StepContext): Tensor {
    let h = this.transformer.forward(ids, ctx);
    if (ctx.lastOnly) h = h.narrow(1, h.shape[1] - 1, 1);
    if (ctx.cache) ctx.cache.advance(ids.shape[1]);
    return this.lm_head.forward(h);
  }

  hfNames(): { name: string; hf: string; transposed: boolean }[] {
    return [...this.namedParameters()].map(([name]) => ({
      name,
      hf: name,
      transposed: /\.(c_attn|c_proj|c_fc)\.weight$/.test(name),
    }));
  }

  override extraRepr(): string {
    const s = this.#settings;
    return `n_layer=${s.layers}, n_embd=${s.embd}, n_head=${s.heads}, vocab_size=${s.vocab}`;
  }
}
