/** Reductions over dims: the `reduce` kernel family, one code each, and all/any built from it. */
import { ALL, FLOATS, NUMERIC, type OpDecl, op } from './types';

const X = { name: 'input', type: 'tensor' as const };
const DIMS = { name: 'dim', type: 'int|ints' as const, default: null, rule: '-ndim <= dim < ndim, no repeats; omitted: every dim' };
const KEEP = { name: 'keepdim', type: 'bool' as const, default: false };

function reduce(name: string, code: string, o: Partial<OpDecl> & { floats?: boolean } = {}): OpDecl {
  const { floats, ...rest } = o;
  const dtypes = floats ? FLOATS : NUMERIC;
  return op({
    name,
    family: 'reduce',
    code,
    args: [X, DIMS, KEEP],
    dtypes: { cpu: dtypes, cuda: dtypes },
    shape: 'reduce',
    grad: { kind: 'formula', inputs: ['input'] },
    autocast: 'none',
    method: true,
    ...rest,
  });
}

const VAR_ARGS = [X, DIMS, { name: 'options', type: 'options' as const, default: {}, rule: 'correction (>= 0, default 1), keepdim' }];

// all and any: counts of non-zeros, compared with 0 and with the count.
function truth(name: string): OpDecl {
  return op({
    name,
    family: 'composite',
    args: [X, DIMS, KEEP],
    dtypes: { cpu: ALL, cuda: ALL },
    shape: 'reduce',
    grad: { kind: 'none' },
    autocast: 'none',
    method: true,
    output: 'bool',
  });
}

export const reduceOps: OpDecl[] = [
  reduce('sum', 'sum', { autocast: 'f32' }),
  reduce('mean', 'mean', { floats: true, autocast: 'f32' }),
  reduce('max', 'max'),
  reduce('min', 'min'),
  reduce('argmax', 'argmax', {
    args: [X, { name: 'dim', type: 'int', default: null, rule: 'one dim; omitted: the flattened input' }, KEEP],
    grad: { kind: 'none' },
    output: 'i64',
  }),
  reduce('argmin', 'argmin', {
    args: [X, { name: 'dim', type: 'int', default: null, rule: 'one dim; omitted: the flattened input' }, KEEP],
    grad: { kind: 'none' },
    output: 'i64',
  }),
  reduce('var', 'var', { floats: true, args: VAR_ARGS }),
  reduce('std', 'var', { floats: true, args: VAR_ARGS }),
  reduce('logsumexp', 'logsumexp', {
    floats: true,
    autocast: 'f32',
    args: [X, { name: 'dim', type: 'int|ints', rule: '-ndim <= dim < ndim' }, KEEP],
  }),
  op({
    name: 'prod',
    family: 'reduce',
    code: 'prod',
    args: [
      X,
      { name: 'dim', type: 'int', default: null, rule: 'one dim; omitted: every element' },
      KEEP,
      { name: 'options', type: 'options', default: {}, rule: 'dtype; integers and bool give i64' },
    ],
    dtypes: { cpu: NUMERIC, cuda: NUMERIC },
    shape: 'reduce',
    grad: { kind: 'formula', inputs: ['input'] },
    autocast: 'f32',
    method: true,
  }),
  truth('all'),
  truth('any'),
];
