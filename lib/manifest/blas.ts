/** addmm, baddbmm (matmul plus scaled input, gradient as a formula), lerp, and einsum (composite). */
import { FLOATS, type OpDecl, op } from './types';

const SCALES = { name: 'options', type: 'options', default: {}, rule: 'beta (1; 0 ignores input), alpha (1)' } as const;

export const blasOps: OpDecl[] = [
  op({
    name: 'addmm',
    family: 'composite',
    args: [
      { name: 'input', type: 'tensor', rule: 'broadcasts to [n, p]' },
      { name: 'mat1', type: 'tensor', rule: '[n, m], input dtype' },
      { name: 'mat2', type: 'tensor', rule: '[m, p], input dtype' },
      SCALES,
    ],
    dtypes: { cpu: FLOATS, cuda: FLOATS },
    shape: '[n, p]',
    grad: { kind: 'formula', inputs: ['input', 'mat1', 'mat2'] },
    autocast: 'lower',
    method: true,
  }),
  op({
    name: 'baddbmm',
    family: 'composite',
    args: [
      { name: 'input', type: 'tensor', rule: 'broadcasts to [b, n, p]' },
      { name: 'batch1', type: 'tensor', rule: '[b, n, m], input dtype' },
      { name: 'batch2', type: 'tensor', rule: '[b, m, p], input dtype' },
      SCALES,
    ],
    dtypes: { cpu: FLOATS, cuda: FLOATS },
    shape: '[b, n, p]',
    grad: { kind: 'formula', inputs: ['input', 'batch1', 'batch2'] },
    autocast: 'lower',
    method: true,
  }),
  op({
    name: 'lerp',
    family: 'composite',
    args: [
      { name: 'start', type: 'tensor', rule: 'floating' },
      { name: 'end', type: 'tensor', rule: "start's dtype; broadcasts" },
      { name: 'weight', type: 'tensor|number', rule: "a number, or start's dtype; broadcasts" },
    ],
    dtypes: { cpu: FLOATS, cuda: FLOATS },
    shape: 'broadcast',
    grad: { kind: 'formula', inputs: ['start', 'end', 'weight'] },
    autocast: 'promote',
    method: true,
  }),
  op({
    name: 'einsum',
    family: 'composite',
    args: [
      { name: 'equation', type: 'string', rule: "letters, one '...' per term, optional '->' output" },
      { name: 'operands', type: 'tensors', rule: 'one per term, one dtype, sizes agree per label' },
    ],
    dtypes: { cpu: FLOATS, cuda: FLOATS },
    shape: 'the output term',
    grad: { kind: 'composite' },
    autocast: 'lower',
  }),
];
