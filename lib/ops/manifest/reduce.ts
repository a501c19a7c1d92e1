/** Reductions over dims: the `reduce` kernel family, one code each. */
import { FLOATS, NUMERIC, type OpDecl, op } from './types';

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
];
