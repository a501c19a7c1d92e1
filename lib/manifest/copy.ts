/** Copies, casts and device moves: the `cast` and `transfer` kernel families. */
import { ALL, type OpDecl, op } from './types';

export const copyOps: OpDecl[] = [
  op({
    name: 'clone',
    family: 'cast',
    args: [{ name: 'input', type: 'tensor' }],
    dtypes: { cpu: ALL, cuda: ALL },
    shape: 'same',
    grad: { kind: 'formula', inputs: ['input'] },
    autocast: 'none',
    method: true,
  }),
  op({
    name: 'to',
    family: 'cast',
    args: [
      { name: 'input', type: 'tensor' },
      { name: 'target', type: 'options', rule: "a dtype, a device ('cpu', 'cuda:N'), or { dtype, device }" },
    ],
    dtypes: { cpu: ALL, cuda: ALL },
    shape: 'same',
    grad: { kind: 'formula', inputs: ['input'] },
    autocast: 'none',
    method: true,
  }),
  op({
    name: 'copy_',
    family: 'cast',
    args: [
      { name: 'dst', type: 'tensor', rule: 'not a leaf that requires grad outside noGrad; not a view while recorded' },
      { name: 'src', type: 'tensor', rule: "broadcasts to dst's shape; any dtype (cast), any device (moved)" },
    ],
    dtypes: { cpu: ALL, cuda: ALL },
    shape: 'same',
    grad: { kind: 'formula', inputs: ['src'] },
    autocast: 'none',
    method: true,
  }),
];
