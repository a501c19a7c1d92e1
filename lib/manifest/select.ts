/** Selections sized by values (a sync point counts them): maskedSelect and nonzero. */
import { ALL, type OpDecl, op } from './types';

export const selectOps: OpDecl[] = [
  op({
    name: 'maskedSelect',
    family: 'masked_select',
    args: [
      { name: 'input', type: 'tensor' },
      { name: 'mask', type: 'tensor', rule: 'bool, broadcastable with input' },
    ],
    dtypes: { cpu: ALL, cuda: ALL },
    shape: '[count of true mask elements]',
    grad: { kind: 'formula', inputs: ['input'] },
    autocast: 'none',
    method: true,
  }),
  op({
    name: 'nonzero',
    family: 'nonzero',
    args: [
      { name: 'input', type: 'tensor' },
      { name: 'options', type: 'options', default: {}, rule: 'asTuple: one 1-D tensor per dim' },
    ],
    dtypes: { cpu: ALL, cuda: ALL },
    shape: '[count of non-zeros, ndim]',
    grad: { kind: 'none' },
    autocast: 'none',
    method: true,
    output: 'i64',
  }),
];
