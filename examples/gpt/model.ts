/**
 * The GPT-mini model: a decoder-only character transformer (learned positions, pre-norm
 * TransformerEncoderLayers with a causal cut, GELU, tied input and output embeddings), initialised
 * as GPT-2 is. bench/anchors/torch_gpt_mini.py builds the same model in PyTorch.
 */
import * as fl from '../../lib';

const { nn } = fl;

export interface GptConfig {
  vocab: number;
  context: number;
  dModel: number;
  heads: number;
  layers: number;
  dropout: number;
}

export class GptMini extends nn.Module {
  tok: fl.nn.Embedding;
  pos: fl.nn.Embedding;
  blocks: fl.nn.TransformerEncoder;
  ln_f: fl.nn.LayerNorm;
  head: fl.nn.Linear;

  constructor(readonly cfg: GptConfig) {
    super();
    this.tok = new nn.Embedding(cfg.vocab, cfg.dModel);
    this.pos = new nn.Embedding(cfg.context, cfg.dModel);
    const layer = new nn.TransformerEncoderLayer(cfg.dModel, cfg.heads, {
      dimFeedforward: 4 * cfg.dModel,
      dropout: cfg.dropout,
      activation: 'gelu',
      normFirst: true,
      batchFirst: true,
    });
    this.blocks = new nn.TransformerEncoder(layer, cfg.layers);
    this.ln_f = new nn.LayerNorm(cfg.dModel);
    this.head = new nn.Linear(cfg.dModel, cfg.vocab, { bias: false });
    this.head.weight = this.tok.weight; // tied: one parameter, one summed gradient
    // GPT-2's scheme: N(0, 0.02) weights, zero biases, LayerNorm at identity.
    for (const [name, p] of this.namedParameters()) {
      if (name.endsWith('bias')) nn.init.zeros_(p);
      else if (/norm\d?\.weight$|ln_f\.weight$/.test(name)) nn.init.ones_(p);
      else nn.init.normal_(p, 0, 0.02);
    }
  }

  /** ids [B, T] (T ≤ context) → logits [B, T, vocab]. */
  forward(ids: fl.Tensor): fl.Tensor {
    const t = ids.shape[1];
    const positions = fl.arange(0, t, 1, { dtype: 'i64' });
    const x = this.tok.forward(ids).add(this.pos.forward(positions));
    return this.head.forward(this.ln_f.forward(this.blocks.forward(x, { isCausal: true })));
  }
}
