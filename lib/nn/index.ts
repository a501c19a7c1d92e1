/** fl.nn: modules, layers, losses, initialisers and the functional API. */
export { Module } from './module';
export { Parameter } from './parameter';
export { Sequential, ModuleList, ModuleDict } from './container';
export { Linear, type LayerOptions } from './linear';
export { ReLU, LeakyReLU, GELU, SiLU, Tanh, Sigmoid, Softmax, LogSoftmax, Flatten, Identity } from './activation';
export { Dropout } from './dropout';
export { Embedding, type EmbeddingOptions } from './embedding';
export { Conv2d, ConvTranspose2d, type Conv2dLayerOptions, type PaddingMode } from './conv';
export { MaxPool2d, AvgPool2d, AdaptiveAvgPool2d } from './pool';
export { Conv1d, ConvTranspose1d, type Conv1dLayerOptions, type ConvTranspose1dLayerOptions } from './conv1d';
export { MaxPool1d, AvgPool1d, AdaptiveAvgPool1d } from './pool1d';
export { Upsample } from './upsample';
export { PairwiseDistance, CosineSimilarity } from './distance';
export { BatchNorm1d, BatchNorm2d, LayerNorm, GroupNorm, type NormOptions, type BatchNormOptions, type LayerNormOptions } from './norm';
export { CrossEntropyLoss, NLLLoss, MSELoss, L1Loss, SmoothL1Loss, BCEWithLogitsLoss, HuberLoss, BCELoss, KLDivLoss } from './loss';
export * as functional from './functional';
export * as init from './init';
export { MultiheadAttention, type MultiheadAttentionOptions, type MultiheadAttentionForwardOptions } from './attention';
export {
  TransformerEncoderLayer,
  TransformerDecoderLayer,
  TransformerEncoder,
  TransformerDecoder,
  causalMask,
  type TransformerLayerOptions,
  type TransformerActivation,
  type EncoderForwardOptions,
  type DecoderForwardOptions,
} from './transformer';
export { RMSNorm, rmsNorm, type RMSNormOptions } from './rms_norm';
export { RotaryEmbedding, applyRotary, rotaryTables, type RotaryOptions } from './rotary';
export { RNN, LSTM, GRU, type RNNOptions } from './rnn';
export { RNNCell, LSTMCell, GRUCell, type RNNCellOptions } from './rnn_cell';
export * as lora from './lora';
