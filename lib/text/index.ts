/** fl.text: tokenizers for language models. */
// defines: Tokenizer (Hugging Face tokenizer.json), its option and result types
export {
  Tokenizer,
  type TokenizerOptions,
  type SpecialTokenOptions,
  type EncodeOptions,
  type DecodeOptions,
  type BatchEncodeOptions,
  type BatchEncoding,
  type BatchTensors,
} from './tokenizer';
