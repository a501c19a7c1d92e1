/** The convolution, pooling, fused losses, norms, bias-activation and fused optimizer steps (cpp/bindings/nn.cc). */
import { group, hand } from './dsl';

export const nn = group(
  'nn',
  'convolution, pooling, fused losses, norms, bias-activation and fused optimizer steps',
  [
    hand(
      'conv2d',
      null,
      '(x: NativeTensor, w: NativeTensor, stride: number[], padding: number[], dilation: number[], groups: number, bias?: NativeTensor | null): NewTensor',
    ),
    hand(
      'conv2dBackwardInput',
      null,
      '(grad: NativeTensor, w: NativeTensor, inputShape: number[], stride: number[], padding: number[], dilation: number[], groups: number): NewTensor',
    ),
    hand(
      'conv2dBackwardWeight',
      null,
      '(x: NativeTensor, grad: NativeTensor, weightShape: number[], stride: number[], padding: number[], dilation: number[], groups: number): NewTensor',
    ),
    hand(
      'maxPool2d',
      null,
      '(x: NativeTensor, kernel: number[], stride: number[], padding: number[], dilation: number[], ceilMode: boolean, countIncludePad: boolean): [NewTensor, NewTensor]',
    ),
    hand(
      'maxPool2dBackward',
      null,
      '(grad: NativeTensor, indices: NativeTensor, inputShape: number[], kernel: number[], stride: number[], padding: number[], dilation: number[], ceilMode: boolean, countIncludePad: boolean): NewTensor',
    ),
    hand(
      'avgPool2d',
      null,
      '(x: NativeTensor, kernel: number[], stride: number[], padding: number[], dilation: number[], ceilMode: boolean, countIncludePad: boolean): NewTensor',
    ),
    hand(
      'avgPool2dBackward',
      null,
      '(grad: NativeTensor, inputShape: number[], kernel: number[], stride: number[], padding: number[], dilation: number[], ceilMode: boolean, countIncludePad: boolean): NewTensor',
    ),
    hand('adaptiveAvgPool2d', null, '(x: NativeTensor, outputSize: number[]): NewTensor'),
    hand('adaptiveAvgPool2dBackward', null, '(grad: NativeTensor, inputShape: number[]): NewTensor'),
    hand(
      'crossEntropy',
      null,
      '(x: NativeTensor, target: NativeTensor, ignoreIndex: number, labelSmoothing: number): [NewTensor, NewTensor]',
      'Fused log-softmax + NLL over [rows, classes]: [per-row loss, per-row logsumexp].',
    ),
    hand(
      'crossEntropyBackward',
      null,
      '(x: NativeTensor, target: NativeTensor, lse: NativeTensor, grad: NativeTensor, ignoreIndex: number, labelSmoothing: number): NewTensor',
    ),
    hand(
      'layerNorm',
      null,
      '(x: NativeTensor, weight: NativeTensor | null, bias: NativeTensor | null, eps: number): [NewTensor, NewTensor, NewTensor]',
      'Layer norm of each row of [rows, d], affine fused (weight, bias [d] or null): [y, mean [rows], rstd [rows]].',
    ),
    hand(
      'layerNormBackward',
      null,
      '(x: NativeTensor, mean: NativeTensor, rstd: NativeTensor, weight: NativeTensor | null, grad: NativeTensor, weightGrad: boolean, biasGrad: boolean): [NewTensor, NewTensor | null, NewTensor | null]',
      '[dx, dweight or null, dbias or null]; the parameter gradients are column sums in the same kernel.',
    ),
    hand(
      'biasAct',
      'BiasActivation',
      '(x: NativeTensor, bias: NativeTensor, activation: BiasActivation, inPlace?: boolean): NewTensor',
      'act(x + bias) over x [rows, n] and bias [n]: the fused epilogue of linear; with `inPlace`, written into x (the result aliases x).',
    ),
    hand(
      'biasActBackward',
      'BiasActivationBackward',
      '(grad: NativeTensor, saved: NativeTensor, bias: NativeTensor | null, activation: BiasActivation): NewTensor',
      "grad · act'(saved + bias), or act'(saved) without bias (relu may pass its output as saved).",
    ),
    hand(
      'adamStep',
      null,
      '(params: NativeTensor[], grads: NativeTensor[], expAvg: NativeTensor[], expAvgSq: NativeTensor[], maxExpAvgSq: NativeTensor[], lr: number, beta1: number, beta2: number, eps: number, weightDecay: number, step: number, decoupled: boolean, amsgrad: boolean, maximize: boolean, /** f32 master weights of bf16/f16 params (empty for f32/f64 params). */ masters: NativeTensor[], /** Round the bf16/f16 copies stochastically, with Philox counters from (seed, offset). */ stochasticRounding: boolean, seed: number, offset: number): void',
      "In-place fused Adam/AdamW over many tensors, queued on their device's stream; maxExpAvgSq is empty unless amsgrad.",
    ),
    hand(
      'sgdStep',
      null,
      '(params: NativeTensor[], grads: NativeTensor[], momentumBuffers: NativeTensor[], lr: number, momentum: number, dampening: number, weightDecay: number, nesterov: boolean, firstStep: boolean, maximize: boolean, masters: NativeTensor[], stochasticRounding: boolean, seed: number, offset: number): void',
    ),
    hand(
      'rmspropStep',
      null,
      '(params: NativeTensor[], grads: NativeTensor[], squareAvg: NativeTensor[], gradAvg: NativeTensor[], momentumBuffers: NativeTensor[], lr: number, alpha: number, eps: number, weightDecay: number, momentum: number, centered: boolean, maximize: boolean, masters: NativeTensor[], stochasticRounding: boolean, seed: number, offset: number): void',
      'In-place fused RMSprop over many tensors; gradAvg is empty unless centered, momentumBuffers unless momentum > 0.',
    ),
    hand(
      'adagradStep',
      null,
      '(params: NativeTensor[], grads: NativeTensor[], sums: NativeTensor[], lr: number, lrDecay: number, eps: number, weightDecay: number, step: number, maximize: boolean, masters: NativeTensor[], stochasticRounding: boolean, seed: number, offset: number): void',
      'In-place fused Adagrad over many tensors sharing one step count (≥ 1).',
    ),
    hand('gradNorm', null, '(tensors: NativeTensor[], normType: number): NewTensor'),
    hand('clipByNorm', null, '(tensors: NativeTensor[], total: NativeTensor, maxNorm: number): void'),
    hand(
      'ampUnscale',
      null,
      '(tensors: NativeTensor[], foundInf: NativeTensor, invScale: number): void',
      "GradScaler's fused unscale: tensors *= invScale in place; foundInf (0-d f32) set to 1 on any inf/NaN.",
    ),
  ],
  ['../ops/nn.h'],
);
