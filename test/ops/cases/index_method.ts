/**
 * Cases for PyTorch-style indexing (lib/manifest/index_method.ts); index tensors and masks are
 * inputs excluded from gradients. The writes go into a clone, so their gradient check runs through
 * the rebased history of a non-leaf.
 */
import type { Arr, OpCase } from '../harness/types';
import { arr, strides } from './ref';

const idx = (shape: number[], high: number) => ({ shape, kind: 'int' as const, high, noGrad: true });

/** x's element at coordinates `c`. */
const at = (x: Arr, c: number[]) => x.data[c.reduce((k, v, d) => k + v * strides(x.shape)[d], 0)];

/** x with rows `rows` (of a 2-d x) replaced, or with `add`, added to, by the rows of v. */
function putRows(x: Arr, rows: Arr, v: Arr, add: boolean): Arr {
  const out = Float64Array.from(x.data);
  const w = x.shape[1];
  rows.data.forEach((r, j) => {
    for (let c = 0; c < w; c++) out[r * w + c] = (add ? out[r * w + c] : 0) + v.data[j * w + c];
  });
  return arr(x.shape, out);
}

export const cases: OpCase[] = [
  {
    op: 'index',
    label: 'integer, full slice, strided slice: x[1, :, 1:4:2]',
    inputs: [{ shape: [3, 4, 5] }],
    run: (x) => x.index(1, null, [1, 4, 2]),
    reference: (x) => arr([4, 2], (i) => at(x, [1, Math.floor(i / 2), 1 + 2 * (i % 2)])),
  },
  {
    op: 'index',
    label: 'a 2-d index tensor, then slices: x[i, :, ::2]',
    inputs: [{ shape: [3, 4, 5] }, idx([2, 2], 3)],
    run: (x, i) => x.index(i, null, [null, null, 2]),
    reference: (x, i) => arr([2, 2, 4, 3], (k) => at(x, [i.data[Math.floor(k / 12)], Math.floor(k / 3) % 4, 2 * (k % 3)])),
  },
  {
    op: 'index',
    label: 'a bool mask over rows: x[m]',
    inputs: [{ shape: [5, 4] }, { shape: [5], kind: 'bool', noGrad: true }],
    run: (x, m) => x.index(m),
    reference: (x, m) => {
      const rows = Array.from(m.data).flatMap((v, r) => (v ? [r] : []));
      return arr([rows.length, 4], (k) => at(x, [rows[Math.floor(k / 4)], k % 4]));
    },
  },
  {
    op: 'setIndex',
    label: 'x[:, 1:3] = v, v broadcast',
    inputs: [{ shape: [3, 4] }, { shape: [2] }],
    run: (x, v) => x.clone().setIndex([null, [1, 3]], v),
    reference: (x, v) => arr(x.shape, (k) => (k % 4 === 1 || k % 4 === 2 ? v.data[(k % 4) - 1] : x.data[k])),
  },
  {
    op: 'indexPut_',
    label: 'accumulate, repeated rows',
    inputs: [{ shape: [3, 4] }, { shape: [5, 4] }, idx([5], 3)],
    run: (x, v, i) => x.clone().indexPut_([i], v, { accumulate: true }),
    reference: (x, v, i) => putRows(x, i, v, true),
  },
  {
    op: 'indexPut',
    label: 'distinct rows',
    inputs: [{ shape: [3, 4] }, { shape: [2, 4] }, { shape: [2], kind: 'int', values: [2, 0], noGrad: true }],
    run: (x, v, i) => x.indexPut([i], v),
    reference: (x, v, i) => putRows(x, i, v, false),
  },
];
