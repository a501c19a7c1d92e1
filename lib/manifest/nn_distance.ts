/** normalize and the distances between vectors: compositions of norms and element-wise ops. */
import type { OpDecl } from './types';
import { nn } from './nn';

const X1 = { name: 'x1', type: 'tensor' as const, rule: 'broadcasts with x2' };
const X2 = { name: 'x2', type: 'tensor' as const };

export const nnDistanceOps: OpDecl[] = [
  nn(
    'normalize',
    'composite',
    [
      { name: 'input', type: 'tensor' },
      { name: 'options', type: 'options', default: {}, rule: 'p, dim, eps >= 0' },
    ],
    'same',
    [],
    'none',
  ),
  nn(
    'cosineSimilarity',
    'composite',
    [X1, X2, { name: 'options', type: 'options', default: {}, rule: 'dim, eps >= 0' }],
    'broadcast, dim removed',
    [],
    'f32',
  ),
  nn(
    'pairwiseDistance',
    'composite',
    [X1, X2, { name: 'options', type: 'options', default: {}, rule: 'p, eps, keepdim' }],
    'broadcast, last dim reduced',
    [],
    'none',
  ),
];
