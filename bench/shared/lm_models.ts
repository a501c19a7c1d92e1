/**
 * The models of bench/lm.ts (the same shapes as bench/anchors/torch_lm.py builds): a 6-layer,
 * 384-wide GPT-2 and a small Llama (6 layers, 384 wide, grouped-query attention with 2 key/value
 * heads), both with an 8192-token vocabulary unless told otherwise, and the LoRA targets of each.
 */
import * as fl from '../../lib';

export type ModelName = 'gpt2' | 'llama';

export const MODELS: Record<ModelName, { label: string; lora: string[] }> = {
  gpt2: { label: 'gpt2-6x384', lora: ['c_attn', 'c_proj', 'c_fc'] },
  llama: { label: 'llama-6x384-gqa2', lora: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'] },
};

export function build(name: ModelName, vocab: number, positions: number): fl.models.GPT2 | fl.models.Llama {
  fl.manualSeed(0);
  if (name === 'gpt2') return new fl.models.GPT2({ vocab_size: vocab, n_positions: positions, n_embd: 384, n_layer: 6, n_head: 6 });
  return new fl.models.Llama({
    vocab_size: vocab,
    hidden_size: 384,
    intermediate_size: 1024,
    num_hidden_layers: 6,
    num_attention_heads: 6,
    num_key_value_heads: 2,
    max_position_embeddings: positions,
    tie_word_embeddings: false,
  });
}
