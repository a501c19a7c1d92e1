/** Padding and resizing (F.pad, F.interpolate): compositions of index selects, concatenation and products. */
import { ALL, FLOATS, type OpDecl, op } from './types';
import { nn } from './nn';

export const nnResizeOps: OpDecl[] = [
  op({
    name: 'nn.functional.pad',
    family: 'composite',
    args: [
      { name: 'input', type: 'tensor' },
      { name: 'pad', type: 'ints', rule: '[before, after] pairs, last dim first; at most 2·ndim values; negative crops' },
      {
        name: 'options',
        type: 'options',
        default: {},
        rule: "mode: 'constant' (value) | 'reflect' (pad < size) | 'replicate' | 'circular' (pad <= size), the last 1-3 dims of a 2-5-D input",
      },
    ],
    dtypes: { cpu: ALL, cuda: ALL },
    shape: 'each padded dim grows by before + after',
    grad: { kind: 'composite' },
    autocast: 'none',
  }),
  nn(
    'interpolate',
    'composite',
    [
      { name: 'input', type: 'tensor', rule: '3-D to 5-D [N, C, spatial…]' },
      {
        name: 'options',
        type: 'options',
        default: {},
        rule: "size or scaleFactor; mode 'nearest' | 'nearest-exact' | 'linear' (3-D) | 'bilinear' (4-D) | 'trilinear' (5-D) | 'area' (3-D, 4-D); alignCorners (linear modes); recomputeScaleFactor",
      },
    ],
    '[N, C, out…]',
    [],
    'none',
    { dtypes: { cpu: [...FLOATS, 'u8'], cuda: [...FLOATS, 'u8'] } },
  ),
];
