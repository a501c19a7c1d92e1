/** fl.nn.functional: the stateless twins of the layers in fl.nn. */
export { linear, dropout, embedding, type LinearActivation, type LinearOptions } from './functional/basic';
export { conv2d, convTranspose2d, type Conv2dOptions, type ConvTranspose2dOptions } from './functional/conv';
export {
  maxPool2d,
  maxPool2dWithIndices,
  avgPool2d,
  adaptiveAvgPool2d,
  type Pool2dOptions,
  type AvgPool2dOptions,
} from './functional/pool';
export { batchNorm, layerNorm, groupNorm, type BatchNormOptions } from './functional/norm';
export {
  crossEntropy,
  nllLoss,
  mseLoss,
  l1Loss,
  smoothL1Loss,
  binaryCrossEntropyWithLogits,
  type Reduction,
  type CrossEntropyOptions,
  type NLLLossOptions,
  type ReductionOptions,
  type SmoothL1LossOptions,
  type BCEWithLogitsOptions,
} from './functional/loss';
export { relu, leakyRelu, gelu, silu, tanh, sigmoid, softmax, logSoftmax } from './functional/activation';
export { scaledDotProductAttention, type ScaledDotProductAttentionOptions } from './functional/attention';
