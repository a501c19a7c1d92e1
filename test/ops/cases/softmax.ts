/** Cases for softmax and logSoftmax (lib/manifest/softmax.ts). */
import type { Arr, OpCase } from '../harness/types';
import { rows } from './ref';

function softmaxRows(x: Arr, dim: number, log: boolean): Arr {
  const { rows: rs, put } = rows(x, dim);
  return put(
    rs.map((r) => {
      const m = Math.max(...r);
      const s = r.reduce((a, v) => a + Math.exp(v - m), 0);
      return r.map((v) => (log ? v - m - Math.log(s) : Math.exp(v - m) / s));
    }),
  );
}

export const cases: OpCase[] = [
  {
    op: 'softmax',
    inputs: [{ shape: [3, 5] }],
    sized: (n) => [{ shape: [2, n] }],
    run: (x) => x.softmax(-1),
    reference: (x) => softmaxRows(x, -1, false),
  },
  {
    op: 'softmax',
    label: 'dim 0 of 3-d',
    inputs: [{ shape: [3, 2, 2] }],
    run: (x) => x.softmax(0),
    reference: (x) => softmaxRows(x, 0, false),
  },
  {
    op: 'logSoftmax',
    inputs: [{ shape: [3, 5], low: -6, high: 6 }],
    sized: (n) => [{ shape: [2, n] }],
    run: (x) => x.logSoftmax(1),
    reference: (x) => softmaxRows(x, 1, true),
  },
  {
    op: 'logSoftmax',
    label: 'dim 1 of 3-d',
    inputs: [{ shape: [2, 3, 2] }],
    run: (x) => x.logSoftmax(1),
    reference: (x) => softmaxRows(x, 1, true),
  },
];
