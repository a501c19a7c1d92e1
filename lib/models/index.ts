/**
 * fl.models: decoder-only language models with Hugging Face's configs, tensor names and checkpoint
 * layout, and KV-cache generation.
 */
// defines: GPT2 and its config
export { GPT2, type ModelOptions } from './gpt2';
// defines: Llama and its config
export { Llama } from './llama';
export type { GPT2Config, GPT2Activation, LlamaConfig, RopeScaling } from './config';
// defines: the shared surface (forward, generate, stream, savePretrained)
export { CausalLM, type ForwardOptions } from './causal_lm';
export type { GenerateOptions, StreamStep } from './generate';
export type { PretrainedOptions, SavePretrainedOptions } from './pretrained';
export { KVCache, type KVCacheShape } from './kv_cache';
