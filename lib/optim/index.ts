/** fl.optim: optimizers, learning-rate schedulers and gradient clipping. */
export { Optimizer, type OptimizerStateDict, type ParamGroup } from './optimizer';
export { SGD, type SGDOptions } from './sgd';
export { Adam, AdamW, type AdamOptions } from './adam';
export { LRScheduler, StepLR, MultiStepLR, ExponentialLR, CosineAnnealingLR, LinearWarmup, ChainedScheduler } from './scheduler';
export { clipGradNorm_, clipGradValue_, gradNorm } from './clip';
export { RMSprop, type RMSpropOptions } from './rmsprop';
export { Adagrad, type AdagradOptions } from './adagrad';
export {
  LambdaLR,
  OneCycleLR,
  CyclicLR,
  ReduceLROnPlateau,
  type OneCycleLROptions,
  type CyclicLROptions,
  type ReduceLROnPlateauOptions,
} from './schedulers_extra';
