/** Cases for prod, all and any (lib/ops/manifest/reduce_more.ts), and max/min along one dim with indices. */
import * as fl from '../../../lib/index';
import type { Arr, OpCase } from '../harness/types';
import { reduce, rows } from './ref';

const prod = (vs: number[]) => vs.reduce((a, b) => a * b, 1);

/** max/min along one dim: the values and the index of the first extreme. */
function extremeAlong(x: Arr, dim: number, max: boolean): Arr[] {
  const r = rows(x, dim);
  const picks = r.rows.map((line) => line.reduce((best, v, i) => ((max ? v > line[best] : v < line[best]) ? i : best), 0));
  const values = r.put(
    picks.map((k, i) => [r.rows[i][k]]),
    1,
  );
  const indices = r.put(
    picks.map((k) => [k]),
    1,
  );
  const shape = x.shape.filter((_, d) => d !== dim);
  return [
    { shape, data: values.data },
    { shape, data: indices.data },
  ];
}

export const cases: OpCase[] = [
  {
    op: 'max',
    label: 'one dim: values and indices',
    inputs: [{ shape: [3, 5, 2] }],
    sized: (n) => [{ shape: [2, Math.max(n, 1)] }],
    run: (x) => {
      const { values, indices } = x.max(1);
      return [values, indices];
    },
    reference: (x) => extremeAlong(x, 1, true),
  },
  {
    op: 'min',
    label: 'one dim: values and indices',
    inputs: [{ shape: [4, 3] }],
    run: (x) => {
      const { values, indices } = fl.min(x, 0);
      return [values, indices];
    },
    reference: (x) => extremeAlong(x, 0, false),
  },
  {
    op: 'prod',
    inputs: [{ shape: [3, 4], low: 0.5, high: 1.5 }],
    sized: (n) => [{ shape: [2, n], low: 0.95, high: 1.05 }],
    run: (x) => x.prod(1),
    reference: (x) => reduce(x, [1], false, prod),
    tol: { f32: [1e-5, 1e-5], bf16: [3e-2, 3e-2], f16: [8e-3, 8e-3] },
  },
  {
    op: 'prod',
    label: 'every element, keepdim along 0, zeros',
    inputs: [{ shape: [4, 3], values: [1.5, 0, 2, -1, 3, 0.5, 0, 0.5, 2, 2, -2, 1] }],
    run: (x) => [x.prod().reshape([1]), x.prod(0, true)],
    reference: (x) => [{ shape: [1], data: Float64Array.of(prod(Array.from(x.data))) }, reduce(x, [0], true, prod)],
  },
  {
    op: 'prod',
    label: 'integers give i64',
    inputs: [{ shape: [3, 4], kind: 'int', high: 5 }],
    run: (x) => x.to('i32').prod(1),
    reference: (x) => reduce(x, [1], false, prod),
    grad: false,
    dtypes: ['i64'],
  },
  {
    op: 'all',
    inputs: [{ shape: [4, 5], kind: 'int', high: 3 }],
    sized: (n) => [{ shape: [3, n], kind: 'int', high: 2 }],
    run: (x) => x.all(1),
    reference: (x) => reduce(x, [1], false, (vs) => (vs.every((v) => v !== 0) ? 1 : 0)),
    dtypes: ['i64'],
  },
  {
    op: 'all',
    label: 'floats over every element and dims [0, 2]',
    inputs: [{ shape: [2, 3, 2], values: [1, 2, 0.5, -1, 3, 1, 2, 2, 0, 1, 1, 4] }],
    run: (x) => [x.all().reshape([1]), x.all([0, 2], true)],
    reference: (x) => [
      { shape: [1], data: Float64Array.of(x.data.every((v) => v !== 0) ? 1 : 0) },
      reduce(x, [0, 2], true, (vs) => (vs.every((v) => v !== 0) ? 1 : 0)),
    ],
  },
  {
    op: 'any',
    inputs: [{ shape: [4, 5], kind: 'int', high: 2 }],
    sized: (n) => [{ shape: [3, n], kind: 'int', high: 2 }],
    run: (x) => x.any(1, true),
    reference: (x) => reduce(x, [1], true, (vs) => (vs.some((v) => v !== 0) ? 1 : 0)),
    dtypes: ['i64'],
  },
];
