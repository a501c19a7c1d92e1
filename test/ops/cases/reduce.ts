/** Cases for the reductions (lib/manifest/reduce.ts). */
import * as fl from '../../../lib/index';
import type { Tensor } from '../../../lib/index';
import type { Arr, OpCase } from '../harness/types';
import { reduce, rows, sum } from './ref';

type R = (vs: number[]) => number;

/** A reduction case over `dims` of a [3, 4, 2] input, swept over [3, n] reducing dim 1. */
function red(
  op: string,
  run: (x: Tensor) => Tensor,
  f: R,
  dims: number[] | undefined,
  keepdim: boolean,
  extra: Partial<OpCase> = {},
): OpCase {
  return {
    op,
    label: `dims ${dims ? `[${dims}]` : 'all'}${keepdim ? ', keepdim' : ''}`,
    inputs: [{ shape: [3, 4, 2] }],
    sized: dims ? (n) => [{ shape: [3, n, 2] }] : (n) => [{ shape: [n] }],
    run,
    reference: (x: Arr) => reduce(x, dims, keepdim, f),
    ...extra,
  };
}

const mean: R = (vs) => sum(vs) / vs.length;
const variance =
  (correction: number): R =>
  (vs) => {
    const m = mean(vs);
    return vs.reduce((a, v) => a + (v - m) ** 2, 0) / Math.max(vs.length - correction, 0);
  };
const lse: R = (vs) => {
  const m = Math.max(...vs);
  if (vs.length === 0) return -Infinity;
  return m + Math.log(vs.reduce((a, v) => a + Math.exp(v - m), 0));
};
const argOf =
  (better: (a: number, b: number) => boolean): R =>
  (vs) => {
    let k = 0;
    for (let i = 1; i < vs.length; i++) if (better(vs[i], vs[k])) k = i;
    return k;
  };
const INTS: Partial<OpCase> = { dtypes: ['i32', 'i64'], grad: false };
// Sums in low precision round at every step: bf16/f16 get room for the sum's size.
const LOW: Partial<OpCase> = { tol: { bf16: [3e-2, 6e-2], f16: [5e-3, 2e-2] } };
// Random distinct floats have no ties; the odd sizes avoid empty dims for max/min.
const nonEmpty = (n: number) => Math.max(n, 1);

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
  red('sum', (x) => x.sum(), sum, undefined, false, LOW),
  red('sum', (x) => x.sum(1, true), sum, [1], true, LOW),
  red('sum', (x) => x.sum([0, 2]), sum, [0, 2], false, LOW),
  { ...red('sum', (x) => x.sum(1), sum, [1], false, INTS), label: 'integers, dim 1' },
  red('mean', (x) => x.mean(), mean, undefined, false, LOW),
  red('mean', (x) => x.mean([0, 2], true), mean, [0, 2], true, LOW),
  red(
    'max',
    (x) => x.max(),
    (vs) => Math.max(...vs),
    undefined,
    false,
    { sized: (n) => [{ shape: [nonEmpty(n)] }] },
  ),
  red(
    'max',
    (x) => x.max(1).values,
    (vs) => Math.max(...vs),
    [1],
    false,
    { sized: (n) => [{ shape: [3, nonEmpty(n), 2] }] },
  ),
  {
    ...red(
      'max',
      (x) => x.max(2).values,
      (vs) => Math.max(...vs),
      [2],
      false,
      INTS,
    ),
    label: 'integers, dim 2',
  },
  red(
    'min',
    (x) => x.min(),
    (vs) => Math.min(...vs),
    undefined,
    false,
    { sized: (n) => [{ shape: [nonEmpty(n)] }] },
  ),
  red(
    'min',
    (x) => x.min([0, 1], true),
    (vs) => Math.min(...vs),
    [0, 1],
    true,
    { sized: (n) => [{ shape: [nonEmpty(n), 2, 2] }] },
  ),
  red(
    'argmax',
    (x) => x.argmax(1),
    argOf((a, b) => a > b),
    [1],
    false,
    { sized: (n) => [{ shape: [3, nonEmpty(n), 2] }] },
  ),
  red(
    'argmax',
    (x) => x.argmax(),
    argOf((a, b) => a > b),
    undefined,
    false,
    { sized: (n) => [{ shape: [nonEmpty(n)] }] },
  ),
  red(
    'argmin',
    (x) => x.argmin(2, true),
    argOf((a, b) => a < b),
    [2],
    true,
    { sized: (n) => [{ shape: [3, nonEmpty(n), 2] }] },
  ),
  red('var', (x) => x.var(1), variance(1), [1], false, { ...LOW, sized: (n) => [{ shape: [3, n + 2, 2] }] }),
  red('var', (x) => x.var([0, 2], { correction: 0, keepdim: true }), variance(0), [0, 2], true, LOW),
  red(
    'std',
    (x) => x.std(1),
    (vs) => Math.sqrt(variance(1)(vs)),
    [1],
    false,
    { ...LOW, sized: (n) => [{ shape: [3, n + 2, 2] }] },
  ),
  red(
    'std',
    (x) => x.std(undefined, { correction: 0 }),
    (vs) => Math.sqrt(variance(0)(vs)),
    undefined,
    false,
    {
      ...LOW,
      sized: (n) => [{ shape: [n + 1] }],
    },
  ),
  red('logsumexp', (x) => x.logsumexp(1), lse, [1], false, { sized: (n) => [{ shape: [3, nonEmpty(n), 2] }] }),
  red('logsumexp', (x) => x.logsumexp([0, 2], true), lse, [0, 2], true),
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
