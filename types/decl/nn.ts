/** The convolution, pooling, fused losses, norms, bias-activation and fused optimizer steps (cpp/bindings/nn.cc). */
import { bool, fn, group, hand, int, number, opCode, shape, tensor, tensorOrNull, tensors } from './dsl';

export const nnExports = group(
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
    fn('adaptiveAvgPool2dBackward', [tensor('grad'), shape('inputShape')], 'tensor'),
    fn(
      'crossEntropy',
      [tensor('x'), tensor('target'), int('ignoreIndex', -(2 ** 30), 2 ** 30), number('labelSmoothing', { range: [0, 1] })],
      'tensors',
      {
        doc: 'Fused log-softmax + NLL over [rows, classes]: [per-row loss, per-row logsumexp].',
        ts: '[NewTensor, NewTensor]',
        call: 'ops::cross_entropy_forward($x, $target, $ignoreIndex, $labelSmoothing)',
      },
    ),
    fn(
      'crossEntropyBackward',
      [
        tensor('x'),
        tensor('target'),
        tensor('lse'),
        tensor('grad'),
        int('ignoreIndex', -(2 ** 30), 2 ** 30),
        number('labelSmoothing', { range: [0, 1] }),
      ],
      'tensor',
    ),
    fn('layerNorm', [tensor('x'), tensorOrNull('weight'), tensorOrNull('bias'), number('eps')], 'tensors', {
      doc: 'Layer norm of each row of [rows, d], affine fused (weight, bias [d] or null): [y, mean [rows], rstd [rows]].',
      ts: '[NewTensor, NewTensor, NewTensor]',
      call: 'ops::layer_norm_forward($x, $weight, $bias, $eps)',
    }),
    hand(
      'layerNormBackward',
      null,
      '(x: NativeTensor, mean: NativeTensor, rstd: NativeTensor, weight: NativeTensor | null, grad: NativeTensor, weightGrad: boolean, biasGrad: boolean): [NewTensor, NewTensor | null, NewTensor | null]',
      '[dx, dweight or null, dbias or null]; the parameter gradients are column sums in the same kernel.',
    ),
    fn('biasAct', [tensor('x'), tensor('bias'), opCode('bias_act', 'activation'), bool('inPlace', { default: false })], 'tensor', {
      doc: 'act(x + bias) over x [rows, n] and bias [n]: the fused epilogue of linear; with `inPlace`, written into x (the result aliases x).',
    }),
    fn('biasActBackward', [tensor('grad'), tensor('saved'), tensorOrNull('bias'), opCode('bias_act', 'activation')], 'tensor', {
      doc: "grad · act'(saved + bias), or act'(saved) without bias (relu may pass its output as saved).",
    }),
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
    fn('gradNorm', [tensors('tensors'), number('normType')], 'tensor'),
    fn('clipByNorm', [tensors('tensors'), tensor('total'), number('maxNorm')], 'void'),
    fn('ampUnscale', [tensors('tensors'), tensor('foundInf'), number('invScale')], 'void', {
      doc: "GradScaler's fused unscale: tensors *= invScale in place; foundInf (0-d f32) set to 1 on any inf/NaN.",
    }),
  ],
  ['../ops/nn.h'],
);
