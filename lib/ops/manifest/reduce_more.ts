/** Reductions declared after reduce.ts's: prod (the `reduce` kernel's prod), all and any (counts of non-zeros). */
import { ALL, NUMERIC, type OpDecl, op } from './types';

const X = { name: 'input', type: 'tensor' as const };
const KEEP = { name: 'keepdim', type: 'bool' as const, default: false };
const DIMS = { name: 'dim', type: 'int|ints' as const, default: null, rule: '-ndim <= dim < ndim, no repeats; omitted: every dim' };

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

export const reduceMoreOps: OpDecl[] = [
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
