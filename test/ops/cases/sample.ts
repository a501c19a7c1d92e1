/**
 * Cases for randperm and multinomial (lib/manifest/sample.ts). The draws are random, so each
 * case checks what every draw must satisfy: a permutation sorts to 0..n-1; a draw without
 * replacement of every non-zero category, sorted, is those categories; a one-hot row always gives its index.
 */
import * as fl from '../../../lib/index';
import type { OpCase } from '../harness/types';
import { arr } from './ref';

export const cases: OpCase[] = [
  {
    op: 'randperm',
    inputs: [{ shape: [37], kind: 'int' }],
    sized: (n) => [{ shape: [n], kind: 'int' }],
    run: (x) => fl.randperm(x.shape[0], { device: x.device }).sort().values,
    reference: (x) => arr(x.shape, (i) => i),
    dtypes: ['i64'],
  },
  {
    op: 'multinomial',
    label: 'without replacement, every non-zero category',
    inputs: [{ shape: [3, 6], values: [0.5, 0, 2, 0, 1, 0.25, 0, 1, 2, 0, 3, 0.5, 1, 1, 0, 1, 0, 1] }],
    run: (p) => p.multinomial(4).sort(1).values,
    reference: () => arr([3, 4], [0, 2, 4, 5, 1, 2, 4, 5, 0, 1, 3, 5]),
    grad: false,
  },
  {
    op: 'multinomial',
    label: 'with replacement, one-hot rows',
    inputs: [{ shape: [2, 5], values: [0, 0, 0, 3, 0, 0.5, 0, 0, 0, 0] }],
    run: (p) => fl.multinomial(p, 7, true),
    reference: () => arr([2, 7], (i) => (i < 7 ? 3 : 0)),
    grad: false,
  },
];
