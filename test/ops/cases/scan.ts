/** Cases for cumsum, cumprod and logcumsumexp (lib/manifest/scan.ts). */
import type { Arr, OpCase } from '../harness/types';
import { rows } from './ref';

function running(x: Arr, dim: number, prod: boolean): Arr {
  if (x.shape.length === 0) return x;
  const r = rows(x, dim);
  return r.put(
    r.rows.map((line) => {
      let acc = prod ? 1 : 0;
      return line.map((v) => (acc = prod ? acc * v : acc + v));
    }),
  );
}

/** log(Σ_{k<=i} exp(x_k)) along dim, in f64 by log-add-exp (no overflow for large inputs). */
function logRunning(x: Arr, dim: number): Arr {
  if (x.shape.length === 0) return x;
  const r = rows(x, dim);
  return r.put(
    r.rows.map((line) => {
      let acc = Number.NEGATIVE_INFINITY;
      return line.map((v) => {
        const hi = Math.max(acc, v);
        return (acc = hi + Math.log1p(Math.exp(Math.min(acc, v) - hi)));
      });
    }),
  );
}

export const cases: OpCase[] = [
  {
    op: 'cumsum',
    inputs: [{ shape: [3, 5] }],
    sized: (n) => [{ shape: [2, n] }],
    run: (x) => x.cumsum(1),
    reference: (x) => running(x, 1, false),
    tol: { bf16: [2e-2, 6e-2], f16: [4e-3, 2e-2], f32: [2e-5, 1e-4] },
  },
  {
    op: 'cumsum',
    label: 'dim 0 of 3-d, integers give i64',
    inputs: [{ shape: [4, 2, 3], kind: 'int', high: 7 }],
    dtypes: ['i64'],
    run: (x) => x.to('i32').cumsum(0),
    reference: (x) => running(x, 0, false),
    grad: false,
  },
  {
    op: 'cumsum',
    label: 'dim -2',
    inputs: [{ shape: [2, 6, 3] }],
    run: (x) => x.cumsum(-2),
    reference: (x) => running(x, 1, false),
  },
  {
    op: 'cumprod',
    inputs: [{ shape: [3, 6], low: 0.5, high: 1.5 }],
    sized: (n) => [{ shape: [2, n], low: 0.9, high: 1.1 }],
    run: (x) => x.cumprod(1),
    reference: (x) => running(x, 1, true),
    tol: { bf16: [3e-2, 3e-2], f16: [8e-3, 8e-3], f32: [1e-4, 1e-5] },
  },
  {
    op: 'cumprod',
    label: 'dim 0 with zeros',
    inputs: [{ shape: [4, 3], values: [1.5, 0, 2, -1, 3, 0, 0, 0.5, 2, 2, -2, 1] }],
    run: (x) => x.cumprod(0),
    reference: (x) => running(x, 0, true),
  },
  {
    op: 'logcumsumexp',
    inputs: [{ shape: [3, 5], low: -3, high: 3 }],
    sized: (n) => [{ shape: [2, n], low: -3, high: 3 }],
    run: (x) => x.logcumsumexp(1),
    reference: (x) => logRunning(x, 1),
    tol: { bf16: [2e-2, 4e-2], f16: [4e-3, 1e-2], f32: [2e-6, 1e-5] },
  },
  {
    op: 'logcumsumexp',
    label: 'dim -3 of 3-d',
    inputs: [{ shape: [4, 3, 2], low: -2, high: 2 }],
    run: (x) => x.logcumsumexp(-3),
    reference: (x) => logRunning(x, 0),
  },
  {
    op: 'logcumsumexp',
    label: 'values whose exp overflows f32',
    inputs: [{ shape: [2, 4], values: [100, 101, 99, 102, -100, -101, -99, -102] }],
    dtypes: ['f32', 'f64'],
    run: (x) => x.logcumsumexp(1),
    reference: (x) => logRunning(x, 1),
  },
];
