/** Writes along a dim at given indices: scatter, scatterReduce (`scatter_reduce`) and indexAdd (`scatter_add`). */
import { NUMERIC, ALL, type OpDecl, op } from './types';

const X = { name: 'input', type: 'tensor' as const };
const DIM = { name: 'dim', type: 'int' as const, rule: '-ndim <= dim < ndim' };
const INDEX = {
  name: 'index',
  type: 'tensor' as const,
  rule: 'i64 or i32, the input rank, no larger than src anywhere and than input outside dim; values in [0, size of dim)',
};

export const scatterOps: OpDecl[] = [
  op({
    name: 'scatter',
    family: 'scatter',
    args: [X, DIM, INDEX, { name: 'src', type: 'tensor|number', rule: "a tensor of input's dtype, or a number that fits it" }],
    dtypes: { cpu: ALL, cuda: ALL },
    shape: 'same',
    grad: { kind: 'formula', inputs: ['input', 'src'] },
    autocast: 'none',
    method: true,
  }),
  op({
    name: 'scatterReduce',
    family: 'scatter_reduce',
    args: [
      X,
      DIM,
      INDEX,
      { name: 'src', type: 'tensor', rule: "input's dtype" },
      { name: 'reduce', type: 'string', rule: "'sum' | 'prod' | 'mean' | 'amax' | 'amin'" },
      { name: 'options', type: 'options', default: {}, rule: 'includeSelf (default true)' },
    ],
    dtypes: { cpu: NUMERIC, cuda: NUMERIC },
    shape: 'same',
    grad: { kind: 'formula', inputs: ['input', 'src'] },
    autocast: 'none',
    method: true,
  }),
  op({
    name: 'indexAdd',
    family: 'scatter_add',
    args: [
      X,
      DIM,
      { name: 'index', type: 'tensor', rule: '1-D i64 or i32, values in [0, size of dim)' },
      { name: 'source', type: 'tensor', rule: "input's dtype and shape, with index.numel() along dim" },
      { name: 'options', type: 'options', default: {}, rule: 'alpha (a number, default 1)' },
    ],
    dtypes: { cpu: NUMERIC, cuda: NUMERIC },
    shape: 'same',
    grad: { kind: 'formula', inputs: ['input', 'source'] },
    autocast: 'none',
    method: true,
  }),
];
