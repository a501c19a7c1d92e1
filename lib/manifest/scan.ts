/**
 * Running sums and products along a dim: the `scan` kernel family (cumprod's gradient has its own
 * kernel); logcumsumexp has a kernel of its own, its glue generated (`kernel`).
 */
import { ALL, FLOATS, type OpDecl, op } from './types';

const ARGS = [
  { name: 'input', type: 'tensor' as const },
  { name: 'dim', type: 'int' as const, rule: '-ndim <= dim < ndim' },
  { name: 'options', type: 'options' as const, default: {}, rule: 'dtype: converts the input first; integers and bool give i64' },
];

export const scanOps: OpDecl[] = [
  op({
    name: 'cumsum',
    family: 'scan',
    args: ARGS,
    dtypes: { cpu: ALL, cuda: ALL },
    shape: 'same',
    grad: { kind: 'formula', inputs: ['input'] },
    autocast: 'f32',
    method: true,
  }),
  op({
    name: 'cumprod',
    family: 'scan',
    args: ARGS,
    dtypes: { cpu: ALL, cuda: ALL },
    shape: 'same',
    grad: { kind: 'formula', inputs: ['input'] },
    autocast: 'f32',
    method: true,
  }),
  op({
    name: 'logcumsumexp',
    family: 'logcumsumexp',
    args: [
      { name: 'input', type: 'tensor' },
      { name: 'dim', type: 'int', rule: '-ndim <= dim < ndim', check: { dimOf: 'input' } },
    ],
    dtypes: { cpu: FLOATS, cuda: FLOATS },
    shape: 'same',
    grad: { kind: 'formula', inputs: ['input'] },
    autocast: 'f32',
    method: true,
    kernel: { workPerElement: 64 },
    doc: 'log(cumsum(exp(input), dim)) without overflow: each step adds the next term in log space (torch.logcumsumexp).',
  }),
];
