/** flip and roll (strided copies with no kernel of their own), repeat, tile and unbind (composite). */
import { ALL, type ArgDecl, type OpDecl, op } from './types';

const X: ArgDecl = { name: 'input', type: 'tensor' };

function rearrange(name: string, family: string, args: ArgDecl[], shape: string): OpDecl {
  return op({
    name,
    family,
    args: [X, ...args],
    dtypes: { cpu: ALL, cuda: ALL },
    shape,
    grad: family === 'composite' ? { kind: 'composite' } : { kind: 'formula', inputs: ['input'] },
    autocast: 'none',
    method: true,
  });
}

export const rearrangeOps: OpDecl[] = [
  rearrange('flip', 'strided_copy', [{ name: 'dims', type: 'int|ints', rule: 'distinct dims in [-ndim, ndim)' }], 'same'),
  rearrange(
    'roll',
    'strided_copy',
    [
      { name: 'shifts', type: 'int|ints', rule: 'one per dim; a single shift without dims' },
      { name: 'dims', type: 'int|ints', default: null, rule: 'as many as shifts; none rolls the flattened tensor' },
    ],
    'same',
  ),
  rearrange(
    'repeat',
    'composite',
    [{ name: 'repeats', type: 'ints', rule: 'non-negative, at least ndim of them' }],
    'size × repeats per dim',
  ),
  rearrange(
    'tile',
    'composite',
    [{ name: 'reps', type: 'ints', rule: 'non-negative; fewer than ndim padded with leading 1s' }],
    'size × reps per dim',
  ),
  rearrange(
    'unbind',
    'composite',
    [{ name: 'dim', type: 'int', default: 0, rule: '-ndim <= dim < ndim, ndim >= 1' }],
    'size(dim) tensors without dim',
  ),
];
