/**
 * fl.nn.functional ops with kernels of their own: linear's fused bias + activation, convolution,
 * pooling, fused cross-entropy, row normalisation; and the composite layers built from other ops.
 * Every nn op takes every float dtype: the conv, pooling, loss and norm kernels widen bf16/f16 to f32 inside.
 */
import { ALL, type ArgDecl, FLOATS, type OpDecl, op } from './types';

const X: ArgDecl = { name: 'input', type: 'tensor' };
const T: ArgDecl = { name: 'target', type: 'tensor' };
const BOTH = { cpu: FLOATS, cuda: FLOATS };
const POOL_OPTS: ArgDecl = {
  name: 'options',
  type: 'options',
  default: {},
  rule: 'stride, padding (<= half the kernel), dilation, ceilMode',
};
const REDUCTION: ArgDecl = { name: 'options', type: 'options', default: {}, rule: "reduction: 'mean' | 'sum' | 'none'" };

/** An nn.functional op: all float dtypes on both devices; the gradient a formula, or composite for family 'composite'. */
export function nn(
  name: string,
  family: string,
  args: ArgDecl[],
  shape: string,
  inputs: string[],
  autocast: OpDecl['autocast'],
  extra: Partial<OpDecl> = {},
): OpDecl {
  return op({
    name: `nn.functional.${name}`,
    family,
    args,
    dtypes: BOTH,
    shape,
    grad: family === 'composite' ? { kind: 'composite' } : { kind: 'formula', inputs },
    autocast,
    ...extra,
  });
}

export const nnOps: OpDecl[] = [
  nn(
    'linear',
    'bias_act',
    [
      X,
      { name: 'weight', type: 'tensor', rule: '[out, in] with in = last dim of input' },
      { name: 'bias', type: 'tensor?', default: null, rule: '[out]' },
      {
        name: 'options',
        type: 'options',
        default: {},
        rule: "activation: 'none' | 'relu' | 'gelu' | 'gelu_tanh' | 'silu' | 'tanh' | 'sigmoid'",
      },
    ],
    '[..., out]',
    ['input', 'weight', 'bias'],
    'lower',
    { codes: { bias_act: ['none', 'relu', 'gelu', 'gelu_tanh', 'silu', 'tanh', 'sigmoid'] }, dtypes: { cpu: FLOATS, cuda: FLOATS } },
  ),
  nn(
    'dropout',
    'composite',
    [
      X,
      { name: 'p', type: 'number', default: 0.5, rule: '0 <= p <= 1; 0 < p < 1 needs a floating input' },
      { name: 'training', type: 'bool', default: true },
    ],
    'same',
    [],
    'none',
    // Every dtype when not training or p is 0 or 1 (the input, or zeros), as torch.
    { dtypes: { cpu: ALL, cuda: ALL } },
  ),
  nn(
    'embedding',
    'index_select',
    [
      { name: 'indices', type: 'tensor', rule: 'i64 or i32 in [0, num)' },
      { name: 'weight', type: 'tensor', rule: '[num, dim]' },
    ],
    '[...indices.shape, dim]',
    ['weight'],
    'none',
    { dtypes: { cpu: ALL, cuda: ALL } },
  ),
  nn(
    'conv2d',
    'conv2d_forward',
    [
      X,
      { name: 'weight', type: 'tensor', rule: '[outC, inC / groups, kH, kW]' },
      { name: 'bias', type: 'tensor?', default: null, rule: '[outC]' },
      {
        name: 'options',
        type: 'options',
        default: {},
        rule: 'stride >= 1, padding >= 0, dilation >= 1, groups divides both channel counts',
      },
    ],
    '[N, outC, oH, oW]',
    ['input', 'weight', 'bias'],
    'lower',
  ),
  nn(
    'convTranspose2d',
    'conv2d_backward_input',
    [
      X,
      { name: 'weight', type: 'tensor', rule: '[inC, outC / groups, kH, kW]' },
      { name: 'bias', type: 'tensor?', default: null, rule: '[outC]' },
      { name: 'options', type: 'options', default: {}, rule: 'stride, padding, outputPadding < stride or dilation, dilation, groups' },
    ],
    '[N, outC, oH, oW]',
    ['input', 'weight', 'bias'],
    'lower',
  ),
  nn('maxPool2d', 'max_pool2d_forward', [X, { name: 'kernelSize', type: 'int|ints' }, POOL_OPTS], '[N, C, oH, oW]', ['input'], 'none'),
  nn(
    'maxPool2dWithIndices',
    'max_pool2d_forward',
    [X, { name: 'kernelSize', type: 'int|ints' }, POOL_OPTS],
    '[N, C, oH, oW] twice (values, i64 indices)',
    ['input'],
    'none',
  ),
  nn(
    'avgPool2d',
    'avg_pool2d_forward',
    [X, { name: 'kernelSize', type: 'int|ints' }, { ...POOL_OPTS, rule: 'stride, padding, ceilMode, countIncludePad' }],
    '[N, C, oH, oW]',
    ['input'],
    'none',
  ),
  nn(
    'adaptiveAvgPool2d',
    'avg_pool2d_forward',
    [X, { name: 'outputSize', type: 'int|ints', rule: '>= 1' }],
    '[N, C, outH, outW]',
    ['input'],
    'none',
  ),
  nn(
    'batchNorm',
    'composite',
    [
      X,
      { name: 'runningMean', type: 'tensor?' },
      { name: 'runningVar', type: 'tensor?' },
      { name: 'options', type: 'options', default: {}, rule: 'weight, bias, training, momentum, eps' },
    ],
    'same',
    [],
    'f32',
  ),
  nn(
    'layerNorm',
    'layer_norm_forward',
    [
      X,
      { name: 'normalizedShape', type: 'int|ints', rule: "input's trailing dims" },
      { name: 'weight', type: 'tensor?', default: null },
      { name: 'bias', type: 'tensor?', default: null },
      { name: 'eps', type: 'number', default: 1e-5 },
    ],
    'same',
    ['input', 'weight', 'bias'],
    'f32',
  ),
  nn(
    'groupNorm',
    'layer_norm_forward',
    [
      X,
      { name: 'numGroups', type: 'int', rule: 'divides the channel count' },
      { name: 'weight', type: 'tensor?', default: null },
      { name: 'bias', type: 'tensor?', default: null },
      { name: 'eps', type: 'number', default: 1e-5 },
    ],
    'same',
    ['input', 'weight', 'bias'],
    'f32',
  ),
  nn(
    'crossEntropy',
    'cross_entropy_forward',
    [
      X,
      { ...T, rule: 'i64/i32 class indices, or probabilities of the input shape' },
      { name: 'options', type: 'options', default: {}, rule: 'reduction, ignoreIndex, labelSmoothing in [0, 1], weight' },
    ],
    'reduction',
    ['input'],
    'f32',
  ),
  nn(
    'nllLoss',
    'gather',
    [X, { ...T, rule: 'i64/i32 class indices' }, { name: 'options', type: 'options', default: {}, rule: 'reduction, ignoreIndex, weight' }],
    'reduction',
    ['input'],
    'f32',
  ),
  nn('mseLoss', 'composite', [X, T, REDUCTION], 'reduction', [], 'f32'),
  nn('l1Loss', 'composite', [X, T, REDUCTION], 'reduction', [], 'f32'),
  nn('smoothL1Loss', 'composite', [X, T, { ...REDUCTION, rule: 'reduction, beta >= 0' }], 'reduction', [], 'f32'),
  nn('binaryCrossEntropyWithLogits', 'composite', [X, T, { ...REDUCTION, rule: 'reduction, weight, posWeight' }], 'reduction', [], 'f32'),
  nn('huberLoss', 'composite', [X, T, { ...REDUCTION, rule: 'reduction, delta > 0' }], 'reduction', [], 'f32'),
  nn(
    'binaryCrossEntropy',
    'composite',
    [{ ...X, rule: 'probabilities in [0, 1]' }, T, { ...REDUCTION, rule: 'reduction, weight broadcast against the input' }],
    'reduction',
    [],
    'f32',
  ),
  nn(
    'klDiv',
    'composite',
    [{ ...X, rule: 'log-probabilities' }, T, { ...REDUCTION, rule: "reduction: 'mean' | 'batchmean' | 'sum' | 'none', logTarget" }],
    'reduction',
    [],
    'f32',
  ),
];
