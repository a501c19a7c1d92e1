/**
 * 1-d convolution and pooling: [N, C, L] inputs run the 2-d kernels as [N, C, 1, L] images, so each
 * op names the kernel family it launches and gets its gradient from the same formulas.
 */
import type { ArgDecl, OpDecl } from './types';
import { nn } from './nn';

const X: ArgDecl = { name: 'input', type: 'tensor', rule: '3-D [N, C, L]' };
const K: ArgDecl = { name: 'kernelSize', type: 'int|ints', rule: 'an integer >= 1 (or a list of one)' };
const CONV_OPTS: ArgDecl = {
  name: 'options',
  type: 'options',
  default: {},
  rule: 'stride >= 1, padding >= 0, dilation >= 1, groups divides both channel counts',
};
const POOL_OPTS: ArgDecl = {
  name: 'options',
  type: 'options',
  default: {},
  rule: 'stride, padding (<= half the window), dilation, ceilMode',
};

export const nn1dOps: OpDecl[] = [
  nn(
    'conv1d',
    'conv2d_forward',
    [
      X,
      { name: 'weight', type: 'tensor', rule: '[outC, inC / groups, k]' },
      { name: 'bias', type: 'tensor?', default: null, rule: '[outC]' },
      CONV_OPTS,
    ],
    '[N, outC, oL]',
    ['input', 'weight', 'bias'],
    'lower',
  ),
  nn(
    'convTranspose1d',
    'conv2d_backward_input',
    [
      X,
      { name: 'weight', type: 'tensor', rule: '[inC, outC / groups, k]' },
      { name: 'bias', type: 'tensor?', default: null, rule: '[outC]' },
      { ...CONV_OPTS, rule: 'stride, padding, outputPadding < stride or dilation, dilation, groups' },
    ],
    '[N, outC, oL]',
    ['input', 'weight', 'bias'],
    'lower',
  ),
  nn('maxPool1d', 'max_pool2d_forward', [X, K, POOL_OPTS], '[N, C, oL]', ['input'], 'none'),
  nn('maxPool1dWithIndices', 'max_pool2d_forward', [X, K, POOL_OPTS], '[N, C, oL] twice (values, i64 indices into L)', ['input'], 'none'),
  nn(
    'avgPool1d',
    'avg_pool2d_forward',
    [X, K, { ...POOL_OPTS, rule: 'stride, padding, ceilMode, countIncludePad' }],
    '[N, C, oL]',
    ['input'],
    'none',
  ),
  nn(
    'adaptiveAvgPool1d',
    'avg_pool2d_forward',
    [X, { name: 'outputSize', type: 'int|ints', rule: '>= 1' }],
    '[N, C, outL]',
    ['input'],
    'none',
  ),
];
