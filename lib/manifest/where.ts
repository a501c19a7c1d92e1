/** Selection by a boolean mask: the `where` kernel family. */
import { ALL, type OpDecl, op } from './types';

export const whereOps: OpDecl[] = [
  op({
    name: 'where',
    family: 'where',
    args: [
      { name: 'condition', type: 'tensor', rule: 'cast to bool; broadcastable with input and other' },
      { name: 'input', type: 'tensor|number' },
      { name: 'other', type: 'tensor|number' },
    ],
    dtypes: { cpu: ALL, cuda: ALL },
    shape: 'broadcast',
    grad: { kind: 'formula', inputs: ['input', 'other'] },
    autocast: 'none',
  }),
  op({
    name: 'maskedFill',
    family: 'where',
    args: [
      { name: 'input', type: 'tensor' },
      { name: 'mask', type: 'tensor', rule: 'a bool tensor broadcastable to input' },
      { name: 'value', type: 'number', rule: "fits input's dtype" },
    ],
    dtypes: { cpu: ALL, cuda: ALL },
    shape: 'same',
    grad: { kind: 'formula', inputs: ['input'] },
    autocast: 'none',
    method: true,
  }),
];
