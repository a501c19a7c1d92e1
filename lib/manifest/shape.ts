/** Shape ops: views where the layout allows, else the `strided_copy` kernel family; the rest composite. */
import { ALL, type ArgDecl, type OpDecl, op } from './types';

const X: ArgDecl = { name: 'input', type: 'tensor' };
const DIM: ArgDecl = { name: 'dim', type: 'int', default: 0, rule: '-ndim <= dim < ndim' };

function shapeOp(name: string, family: string, args: ArgDecl[], shape: string, method = true, inputs = ['input']): OpDecl {
  return op({
    name,
    family,
    args,
    dtypes: { cpu: ALL, cuda: ALL },
    shape,
    grad: family === 'composite' ? { kind: 'composite' } : { kind: 'formula', inputs },
    autocast: 'none',
    method,
  });
}

export const shapeOps: OpDecl[] = [
  shapeOp('reshape', 'strided_copy', [X, { name: 'shape', type: 'ints', rule: 'same element count; at most one -1' }], 'the given shape'),
  shapeOp(
    'flatten',
    'composite',
    [X, { name: 'startDim', type: 'int', default: 0 }, { name: 'endDim', type: 'int', default: -1, rule: 'startDim <= endDim' }],
    'dims startDim..endDim merged',
  ),
  shapeOp(
    'squeeze',
    'composite',
    [X, { name: 'dim', type: 'int|ints', default: null, rule: 'a dim or distinct dims' }],
    'size-1 dims removed',
  ),
  shapeOp('unsqueeze', 'composite', [X, { name: 'dim', type: 'int', rule: '-ndim-1 <= dim <= ndim' }], 'a size-1 dim inserted'),
  shapeOp('expand', 'strided_copy', [X, { name: 'shape', type: 'ints', rule: 'size-1 dims grow; -1 keeps a size' }], 'the given shape'),
  shapeOp('permute', 'strided_copy', [X, { name: 'dims', type: 'ints', rule: 'a permutation of 0..ndim-1' }], 'dims reordered'),
  shapeOp(
    'transpose',
    'composite',
    [X, { name: 'dim0', type: 'int', default: 0 }, { name: 'dim1', type: 'int', default: 1 }],
    'two dims swapped',
  ),
  shapeOp(
    'narrow',
    'strided_copy',
    [
      X,
      DIM,
      { name: 'start', type: 'int', rule: '-size <= start <= size' },
      { name: 'length', type: 'int', rule: 'start + length <= size' },
    ],
    'dim cut to length',
  ),
  shapeOp(
    'slice',
    'composite',
    [X, DIM, { name: 'start', type: 'int', default: 0 }, { name: 'end', type: 'int', default: null }],
    'dim cut to [start, end)',
  ),
  shapeOp(
    'cat',
    'strided_copy',
    [{ name: 'tensors', type: 'tensors', rule: 'non-empty, one dtype, sizes agree off dim' }, DIM],
    'sizes along dim summed',
    false,
    ['tensors'],
  ),
  shapeOp(
    'stack',
    'composite',
    [{ name: 'tensors', type: 'tensors', rule: 'non-empty, one shape' }, DIM],
    'a new dim of size tensors.length',
    false,
  ),
  shapeOp(
    'split',
    'composite',
    [X, { name: 'sizeOrSections', type: 'int|ints', rule: 'a positive size, or sizes summing to the dim' }, DIM],
    'pieces along dim',
  ),
  shapeOp('chunk', 'composite', [X, { name: 'chunks', type: 'int', rule: 'a positive integer' }, DIM], 'pieces along dim'),
];
