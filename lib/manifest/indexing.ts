/** Indexing ops: `index_select`, `gather`, `scatter_add` and `one_hot` kernel families. */
import { ALL, NUMERIC, type OpDecl, op } from './types';

const X = { name: 'input', type: 'tensor' as const };
const DIM = { name: 'dim', type: 'int' as const, rule: '-ndim <= dim < ndim' };
const INDEX = { name: 'index', type: 'tensor' as const, rule: 'i64 or i32, each in [0, size of dim)' };

export const indexingOps: OpDecl[] = [
  op({
    name: 'indexSelect',
    family: 'index_select',
    args: [X, DIM, { ...INDEX, rule: `1-d; ${INDEX.rule}` }],
    dtypes: { cpu: ALL, cuda: ALL },
    shape: 'dim resized to index.length',
    grad: { kind: 'formula', inputs: ['input'] },
    autocast: 'none',
    method: true,
  }),
  op({
    name: 'gather',
    family: 'gather',
    args: [X, DIM, { ...INDEX, rule: `input's ndim, no larger off dim; ${INDEX.rule}` }],
    dtypes: { cpu: ALL, cuda: ALL },
    shape: "index's shape",
    grad: { kind: 'formula', inputs: ['input'] },
    autocast: 'none',
    method: true,
  }),
  op({
    name: 'scatterAdd',
    family: 'scatter_add',
    args: [X, DIM, INDEX, { name: 'src', type: 'tensor', rule: "input's dtype, at least index's shape" }],
    dtypes: { cpu: NUMERIC, cuda: NUMERIC },
    shape: 'same',
    grad: { kind: 'formula', inputs: ['input', 'src'] },
    autocast: 'promote',
    method: true,
  }),
  op({
    name: 'oneHot',
    family: 'one_hot',
    args: [
      { name: 'index', type: 'tensor', rule: 'i64 or i32 class indices in [0, numClasses)' },
      { name: 'numClasses', type: 'int', default: -1, rule: '-1 (max + 1) or a positive count' },
    ],
    dtypes: { cpu: ['i64', 'i32'], cuda: ['i64', 'i32'] },
    shape: '[...index.shape, numClasses]',
    grad: { kind: 'none' },
    autocast: 'none',
    output: 'i64',
  }),
];
