/** Cases for normalize and the distances (lib/manifest/nn_distance.ts), over the last dim of [rows, n] inputs. */
import * as fl from '../../../lib/index';
import type { Arr, OpCase } from '../harness/types';
import { arr } from './ref';

const F = fl.nn.functional;

function lines(x: Arr): number[][] {
  const n = x.shape[x.shape.length - 1];
  return Array.from({ length: x.data.length / n }, (_, r) => Array.from(x.data.subarray(r * n, (r + 1) * n)));
}

const pnorm = (v: number[], p: number) =>
  p === Infinity ? Math.max(...v.map(Math.abs)) : v.reduce((s, x) => s + Math.abs(x) ** p, 0) ** (1 / p);

export const cases: OpCase[] = [
  {
    op: 'nn.functional.normalize',
    label: 'p 2 along the last dim',
    inputs: [{ shape: [4, 6] }],
    sized: (n) => [{ shape: [2, n + 1] }],
    run: (x) => F.normalize(x, { dim: -1 }),
    reference: (x) =>
      arr(
        x.shape,
        lines(x).flatMap((v) => v.map((e) => e / Math.max(pnorm(v, 2), 1e-12))),
      ),
  },
  {
    op: 'nn.functional.normalize',
    label: 'p 1, eps 0.5',
    inputs: [{ shape: [3, 5], low: -0.1, high: 0.3 }],
    run: (x) => F.normalize(x, { p: 1, dim: 1, eps: 0.5 }),
    reference: (x) =>
      arr(
        x.shape,
        lines(x).flatMap((v) => v.map((e) => e / Math.max(pnorm(v, 1), 0.5))),
      ),
  },
  {
    op: 'nn.functional.cosineSimilarity',
    inputs: [{ shape: [4, 6] }, { shape: [4, 6] }],
    sized: (n) => [{ shape: [2, n + 1] }, { shape: [2, n + 1] }],
    run: (a, b) => F.cosineSimilarity(a, b),
    reference: (a, b) => {
      const la = lines(a),
        lb = lines(b);
      return arr(
        [la.length],
        la.map((v, r) => {
          const dot = v.reduce((s, e, i) => s + e * lb[r][i], 0);
          const sa = Math.max(
              v.reduce((s, e) => s + e * e, 0),
              1e-16,
            ),
            sb = Math.max(
              lb[r].reduce((s, e) => s + e * e, 0),
              1e-16,
            );
          return dot / Math.sqrt(sa * sb);
        }),
      );
    },
  },
  {
    op: 'nn.functional.pairwiseDistance',
    label: 'p 3, keepdim',
    inputs: [{ shape: [4, 5] }, { shape: [4, 5] }],
    sized: (n) => [{ shape: [2, n + 1] }, { shape: [2, n + 1] }],
    run: (a, b) => F.pairwiseDistance(a, b, { p: 3, keepdim: true }),
    reference: (a, b) => {
      const la = lines(a),
        lb = lines(b);
      return arr(
        [la.length, 1],
        la.map((v, r) =>
          pnorm(
            v.map((e, i) => e - lb[r][i] + 1e-6),
            3,
          ),
        ),
      );
    },
    tol: { f32: [1e-4, 1e-4] },
  },
];
