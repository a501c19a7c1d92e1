/** Sorting along a dim: the `sort` kernel family (stable; values and i64 indices). */
import { ALL, type OpDecl, op } from './types';

const X = { name: 'input', type: 'tensor' as const };
const DIM = { name: 'dim', type: 'int' as const, default: -1, rule: '-ndim <= dim < ndim' };
const DESC = { name: 'descending', type: 'bool' as const, default: false };
const STABLE = { name: 'stable', type: 'bool' as const, default: false, rule: 'accepted either way: the sort is always stable' };

export const sortOps: OpDecl[] = [
  op({
    name: 'sort',
    family: 'sort',
    args: [X, DIM, DESC, STABLE],
    dtypes: { cpu: ALL, cuda: ALL },
    shape: '{ values, indices } of the input shape',
    grad: { kind: 'formula', inputs: ['input'] },
    autocast: 'none',
    method: true,
  }),
  op({
    name: 'argsort',
    family: 'sort',
    args: [X, DIM, DESC, STABLE],
    dtypes: { cpu: ALL, cuda: ALL },
    shape: 'same',
    grad: { kind: 'none' },
    autocast: 'none',
    method: true,
    output: 'i64',
  }),
  op({
    name: 'topk',
    family: 'sort',
    args: [
      X,
      { name: 'k', type: 'int', rule: '0 <= k <= size of dim' },
      DIM,
      { name: 'largest', type: 'bool', default: true },
      { name: 'sorted', type: 'bool', default: true, rule: 'results come sorted either way' },
    ],
    dtypes: { cpu: ALL, cuda: ALL },
    shape: '{ values, indices } with k along dim',
    grad: { kind: 'formula', inputs: ['input'] },
    autocast: 'none',
    method: true,
  }),
  op({
    name: 'unique',
    family: 'sort',
    args: [
      X,
      {
        name: 'options',
        type: 'options',
        default: {},
        rule: 'sorted (accepted either way), returnInverse, returnCounts; dim is not supported',
      },
    ],
    dtypes: { cpu: ALL, cuda: ALL },
    shape: 'values [distinct count] (a sync point); { values, inverseIndices, counts } when asked',
    grad: { kind: 'none' },
    autocast: 'none',
  }),
];
