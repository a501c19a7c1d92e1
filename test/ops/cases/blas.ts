/** Cases for addmm, baddbmm, lerp and einsum (lib/manifest/blas.ts). */
import * as fl from '../../../lib/index';
import type { Arr, OpCase } from '../harness/types';
import { arr, matmul2, permute, zip, zip3 } from './ref';

const FLOATS = ['f32', 'f64', 'bf16', 'f16'] as const;
const LOW: OpCase['tol'] = { bf16: [3e-2, 3e-2], f16: [5e-3, 5e-3], f32: [1e-4, 1e-5] };

/** Batch `k` of a [b, r, c] array as a [r, c] one. */
const batch = (x: Arr, k: number): Arr => {
  const [, r, c] = x.shape;
  return arr([r, c], x.data.subarray(k * r * c, (k + 1) * r * c));
};

export const cases: OpCase[] = [
  {
    op: 'addmm',
    label: 'beta 0.5, alpha 2, input [p] broadcast',
    inputs: [{ shape: [5] }, { shape: [3, 4] }, { shape: [4, 5] }],
    run: (i, a, b) => fl.addmm(i, a, b, { beta: 0.5, alpha: 2 }),
    reference: (i, a, b) => zip(i, matmul2(a, b), (x, y) => 0.5 * x + 2 * y),
    dtypes: [...FLOATS],
    tol: LOW,
  },
  {
    op: 'baddbmm',
    inputs: [{ shape: [3, 1] }, { shape: [2, 3, 4] }, { shape: [2, 4, 2] }],
    run: (i, a, b) => fl.baddbmm(i, a, b, { beta: -1, alpha: 0.5 }),
    reference: (i, a, b) => {
      const parts = [0, 1].map((k) => zip(i, matmul2(batch(a, k), batch(b, k)), (x, y) => -x + 0.5 * y));
      return arr([2, 3, 2], [...parts[0].data, ...parts[1].data]);
    },
    dtypes: [...FLOATS],
    tol: LOW,
  },
  {
    op: 'lerp',
    label: 'tensor weight, broadcast',
    inputs: [{ shape: [2, 3] }, { shape: [3] }, { shape: [2, 1] }],
    sized: (n) => [{ shape: [n] }, { shape: [n] }, { shape: [1] }],
    run: (s, e, w) => fl.lerp(s, e, w),
    reference: (s, e, w) => zip3(s, e, w, (a, b, t) => a + t * (b - a)),
    dtypes: [...FLOATS],
    tol: LOW,
  },
  {
    op: 'lerp',
    label: 'scalar weight',
    inputs: [{ shape: [3, 4] }, { shape: [3, 4] }],
    run: (s, e) => s.lerp(e, 0.75),
    reference: (s, e) => zip(s, e, (a, b) => a + 0.75 * (b - a)),
    dtypes: [...FLOATS],
    tol: LOW,
  },
  {
    op: 'einsum',
    label: 'bij,bjk->bik',
    inputs: [{ shape: [2, 3, 4] }, { shape: [2, 4, 2] }],
    run: (a, b) => fl.einsum('bij,bjk->bik', a, b),
    reference: (a, b) => {
      const parts = [0, 1].map((k) => matmul2(batch(a, k), batch(b, k)));
      return arr([2, 3, 2], [...parts[0].data, ...parts[1].data]);
    },
    dtypes: ['f32', 'f64'],
    tol: LOW,
  },
  {
    op: 'einsum',
    label: 'ii->i and ij->ji',
    inputs: [{ shape: [3, 3] }],
    run: (a) => [fl.einsum('ii->i', a), fl.einsum('ij->ji', a)],
    reference: (a) => [arr([3], (i) => a.data[i * 4]), permute(a, [1, 0])],
    dtypes: ['f32', 'f64'],
  },
];
