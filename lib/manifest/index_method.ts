/**
 * PyTorch-style indexing (lib/ops/index_method.ts, lib/ops/index_put.ts): `x[...]`, `x[...] = v`,
 * index_put_ and index_put, composed of select/narrow (views), indexSelect, scatter and scatterAdd.
 */
import { ALL, type OpDecl, op } from './types';

const SELF = { name: 'self', type: 'tensor', rule: 'not a leaf that requires grad outside noGrad; not a view while recorded' } as const;
const INDICES = {
  name: 'indices',
  type: 'tensors',
  rule: 'i64/i32 index or bool mask tensors (null keeps a dim), at most ndim dims',
} as const;
const VALUES = { name: 'values', type: 'tensor|number', rule: "self's dtype; broadcasts to the indexed shape" } as const;
const OPTIONS = { name: 'options', type: 'options', default: {}, rule: 'accumulate: add, summing repeated positions' } as const;

export const indexMethodOps: OpDecl[] = [
  op({
    name: 'index',
    family: 'composite',
    args: [
      { name: 'input', type: 'tensor' },
      {
        name: 'entries',
        type: 'options',
        rule: "integers in range, null (:), [start, stop(, step > 0)], index/mask tensors (broadcast together), one '...', 'newaxis'",
      },
    ],
    dtypes: { cpu: ALL, cuda: ALL },
    shape: "PyTorch's x[...]: integers remove dims, slices cut them, index tensors' broadcast shape where PyTorch puts it",
    grad: { kind: 'composite' },
    autocast: 'none',
    method: true,
  }),
  op({
    name: 'setIndex',
    family: 'composite',
    args: [
      SELF,
      { name: 'index', type: 'options', rule: 'the entries of index (an array), or one entry' },
      { name: 'value', type: 'tensor|number', rule: "broadcasts to the indexed shape (extra leading 1s dropped); cast to self's dtype" },
    ],
    dtypes: { cpu: ALL, cuda: ALL },
    shape: "self's",
    grad: { kind: 'composite' },
    autocast: 'none',
    method: true,
  }),
  op({
    name: 'indexPut_',
    family: 'composite',
    args: [SELF, INDICES, VALUES, OPTIONS],
    dtypes: { cpu: ALL, cuda: ALL },
    shape: "self's",
    grad: { kind: 'composite' },
    autocast: 'none',
    method: true,
  }),
  op({
    name: 'indexPut',
    family: 'composite',
    args: [{ name: 'input', type: 'tensor' }, INDICES, VALUES, OPTIONS],
    dtypes: { cpu: ALL, cuda: ALL },
    shape: "input's",
    grad: { kind: 'composite' },
    autocast: 'none',
    method: true,
  }),
];
