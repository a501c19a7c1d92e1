/** fl.nn.functional: the stateless twins of the layers in fl.nn. */
export { linear, dropout, embedding, type LinearActivation, type LinearOptions } from './functional/basic';
export { conv2d, convTranspose2d, type Conv2dOptions, type ConvTranspose2dOptions } from './functional/conv';
export { conv1d, convTranspose1d, type Conv1dOptions, type ConvTranspose1dOptions } from './functional/conv1d';
export {
  maxPool2d,
  maxPool2dWithIndices,
  avgPool2d,
  adaptiveAvgPool2d,
  type Pool2dOptions,
  type AvgPool2dOptions,
} from './functional/pool';
export {
  maxPool1d,
  maxPool1dWithIndices,
  avgPool1d,
  adaptiveAvgPool1d,
  type Pool1dOptions,
  type AvgPool1dOptions,
} from './functional/pool1d';
export { pad, type PadMode, type PadOptions } from './functional/pad';
export { interpolate, type InterpolateMode, type InterpolateOptions } from './functional/interpolate';
export {
  normalize,
  cosineSimilarity,
  pairwiseDistance,
  type NormalizeOptions,
  type CosineSimilarityOptions,
  type PairwiseDistanceOptions,
} from './functional/distance';
export { batchNorm, layerNorm, groupNorm, type BatchNormOptions } from './functional/norm';
export {
  crossEntropy,
  nllLoss,
  mseLoss,
  l1Loss,
  smoothL1Loss,
  huberLoss,
  binaryCrossEntropyWithLogits,
  type Reduction,
  type CrossEntropyOptions,
  type NLLLossOptions,
  type ReductionOptions,
  type SmoothL1LossOptions,
  type HuberLossOptions,
  type BCEWithLogitsOptions,
} from './functional/loss';
export {
  binaryCrossEntropy,
  klDiv,
  type BCELossOptions,
  type KLDivLossOptions,
  type KLDivReduction,
} from './functional/loss_probability';
export { relu, leakyRelu, gelu, silu, tanh, sigmoid, softmax, logSoftmax } from './functional/activation';
export { scaledDotProductAttention, type ScaledDotProductAttentionOptions } from './functional/attention';
export { rnnTanhCell, rnnReluCell, lstmCell, gruCell } from './rnn_cell';
