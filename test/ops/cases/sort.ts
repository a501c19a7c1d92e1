/** Cases for sort, argsort and topk (lib/manifest/sort.ts): values and i64 indices. */
import * as fl from '../../../lib/index';
import type { Arr, OpCase } from '../harness/types';
import { rows } from './ref';

/** Stable order of one line (NaN last), reversed comparisons for descending. */
function order(line: number[], descending: boolean): number[] {
  const idx = line.map((_, i) => i);
  const cmp = (a: number, b: number) => {
    const x = line[a],
      y = line[b];
    const nx = Number.isNaN(x),
      ny = Number.isNaN(y);
    const c = nx && ny ? 0 : nx ? 1 : ny ? -1 : x < y ? -1 : x > y ? 1 : 0;
    return (descending ? -c : c) || a - b;
  };
  return idx.sort(cmp);
}

function sortRef(x: Arr, dim: number, descending: boolean, k?: number): Arr[] {
  if (x.shape.length === 0) return [x, { shape: [], data: new Float64Array(1) }];
  const r = rows(x, dim);
  const orders = r.rows.map((line) => order(line, descending).slice(0, k ?? line.length));
  const size = k ?? x.shape[dim < 0 ? dim + x.shape.length : dim];
  return [
    r.put(
      orders.map((o, i) => o.map((j) => r.rows[i][j])),
      size,
    ),
    r.put(orders, size),
  ];
}

const ALL_KINDS = ['f32', 'f64', 'bf16', 'f16', 'i32', 'i64'] as const;

export const cases: OpCase[] = [
  {
    op: 'sort',
    inputs: [{ shape: [4, 7] }],
    sized: (n) => [{ shape: [2, n] }],
    run: (x) => {
      const { values, indices } = x.sort(1);
      return [values, indices];
    },
    reference: (x) => sortRef(x, 1, false),
    dtypes: [...ALL_KINDS],
  },
  {
    op: 'sort',
    label: 'descending along dim 0, ties',
    inputs: [{ shape: [9, 3], kind: 'int', high: 3 }],
    run: (x) => {
      const { values, indices } = x.to('f32').sort(0, true);
      return [values, indices];
    },
    reference: (x) => sortRef(x, 0, true),
    grad: false,
    dtypes: ['f32'],
  },
  {
    op: 'argsort',
    inputs: [{ shape: [3, 5, 4] }],
    sized: (n) => [{ shape: [n, 2] }],
    run: (x) => x.argsort(0, true),
    reference: (x) => sortRef(x, 0, true)[1],
    dtypes: [...ALL_KINDS],
  },
  {
    op: 'topk',
    inputs: [{ shape: [3, 8] }],
    sized: (n) => [{ shape: [2, n] }],
    run: (x) => {
      const k = Math.min(3, x.shape[1]);
      const { values, indices } = x.topk(k, 1);
      return [values, indices];
    },
    reference: (x) => sortRef(x, 1, true, Math.min(3, x.shape[1])),
    dtypes: [...ALL_KINDS],
  },
  {
    op: 'topk',
    label: 'smallest along dim 0',
    inputs: [{ shape: [6, 4] }],
    run: (x) => {
      const { values, indices } = x.topk(2, 0, false);
      return [values, indices];
    },
    reference: (x) => sortRef(x, 0, false, 2),
  },
  {
    op: 'unique',
    label: 'values, inverse indices and counts',
    inputs: [{ shape: [3, 4], values: [3, -1, 2, 3, 0, 2, 2, -1, 5, 0, 3, 3] }],
    dtypes: ['f32', 'f64', 'i64', 'i32'],
    exact: true,
    run: (x) => {
      const r = fl.unique(x, { returnInverse: true, returnCounts: true });
      return [r.values, r.inverseIndices as fl.Tensor, r.counts as fl.Tensor];
    },
    reference: (x) => {
      const vals = [...new Set(x.data)].sort((a, b) => a - b);
      return [
        { shape: [vals.length], data: Float64Array.from(vals) },
        { shape: [...x.shape], data: x.data.map((v) => vals.indexOf(v)) },
        { shape: [vals.length], data: Float64Array.from(vals, (v) => x.data.filter((e) => e === v).length) },
      ];
    },
  },
];
