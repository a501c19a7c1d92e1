/** Cases for the losses (lib/manifest/nn.ts): class-index targets with ignoreIndex and smoothing, and the element-wise losses. */
import * as fl from '../../../lib/index';
import type { Arr, OpCase } from '../harness/types';
import { arr, sum, zip } from './ref';

const F = fl.nn.functional;

function reduced(losses: number[], weights: number[], reduction: 'mean' | 'sum' | 'none', shape: number[]): Arr {
  if (reduction === 'none') return arr(shape, losses);
  if (reduction === 'sum') return arr([], [sum(losses)]);
  return arr([], [sum(losses) / sum(weights)]);
}

/** Rows of [N, C] log-probabilities (or logits when `logits`), with targets [N]. */
function classLoss(x: Arr, t: Arr, o: { logits: boolean; ignore?: number; smoothing?: number; reduction?: 'mean' | 'sum' | 'none' }): Arr {
  const [n, c] = x.shape;
  const losses: number[] = [],
    weights: number[] = [];
  for (let r = 0; r < n; r++) {
    const row = Array.from(x.data.subarray(r * c, (r + 1) * c));
    let lp = row;
    if (o.logits) {
      const m = Math.max(...row);
      const lse = m + Math.log(row.reduce((a, v) => a + Math.exp(v - m), 0));
      lp = row.map((v) => v - lse);
    }
    const k = t.data[r];
    if (k === (o.ignore ?? -100)) {
      losses.push(0);
      weights.push(0);
      continue;
    }
    const eps = o.smoothing ?? 0;
    losses.push(-(1 - eps) * lp[k] - (eps / c) * sum(lp));
    weights.push(1);
  }
  return reduced(losses, weights, o.reduction ?? 'mean', [n]);
}

const elementwise = (f: (a: number, b: number) => number, reduction: 'mean' | 'sum' | 'none') => (x: Arr, y: Arr) => {
  const l = zip(x, y, f);
  return reduced(
    Array.from(l.data),
    Array.from(l.data, () => 1),
    reduction,
    l.shape,
  );
};

function permuteClassLast(x: Arr): Arr {
  const [n, c, d] = x.shape;
  return arr([n * d, c], (i) => {
    const r = Math.floor(i / c),
      k = i % c;
    return x.data[(Math.floor(r / d) * c + k) * d + (r % d)];
  });
}

const targets = (n: number, c: number) => ({ shape: [n], kind: 'int' as const, high: c, noGrad: true });

export const cases: OpCase[] = [
  {
    op: 'nn.functional.crossEntropy',
    label: 'mean',
    inputs: [{ shape: [4, 5] }, targets(4, 5)],
    sized: (n) => [{ shape: [Math.max(n, 1), 3] }, targets(Math.max(n, 1), 3)],
    run: (x, t) => F.crossEntropy(x, t),
    reference: (x, t) => classLoss(x, t, { logits: true }),
  },
  {
    op: 'nn.functional.crossEntropy',
    label: 'ignoreIndex 2, labelSmoothing 0.1, sum',
    inputs: [{ shape: [6, 4] }, { shape: [6], kind: 'int', values: [0, 2, 1, 3, 2, 1], noGrad: true }],
    run: (x, t) => F.crossEntropy(x, t, { ignoreIndex: 2, labelSmoothing: 0.1, reduction: 'sum' }),
    reference: (x, t) => classLoss(x, t, { logits: true, ignore: 2, smoothing: 0.1, reduction: 'sum' }),
  },
  {
    op: 'nn.functional.crossEntropy',
    label: 'none, wide rows',
    inputs: [{ shape: [2, 37] }, targets(2, 37)],
    sized: (n) => [{ shape: [2, n + 1] }, targets(2, n + 1)],
    run: (x, t) => F.crossEntropy(x, t, { reduction: 'none' }),
    reference: (x, t) => classLoss(x, t, { logits: true, reduction: 'none' }),
  },
  {
    op: 'nn.functional.crossEntropy',
    label: '1025 rows, i32 targets, sum',
    inputs: [{ shape: [1025, 10] }, { shape: [1025], kind: 'i32', high: 10, noGrad: true }],
    run: (x, t) => F.crossEntropy(x, t, { reduction: 'sum' }),
    reference: (x, t) => classLoss(x, t, { logits: true, reduction: 'sum' }),
    tol: { f32: [1e-4, 1e-4] },
  },
  {
    op: 'nn.functional.crossEntropy',
    label: 'rows of 3001, none, smoothing 0.2',
    inputs: [{ shape: [3, 3001] }, targets(3, 3001)],
    run: (x, t) => F.crossEntropy(x, t, { reduction: 'none', labelSmoothing: 0.2 }),
    reference: (x, t) => classLoss(x, t, { logits: true, reduction: 'none', smoothing: 0.2 }),
    tol: { f32: [1e-4, 1e-4] },
  },
  {
    op: 'nn.functional.crossEntropy',
    label: 'spatial [2, 5, 3], smoothing 0.05, ignoreIndex 0',
    inputs: [{ shape: [2, 5, 3] }, { shape: [2, 3], kind: 'int', high: 5, noGrad: true }],
    run: (x, t) => F.crossEntropy(x, t, { labelSmoothing: 0.05, ignoreIndex: 0 }),
    // Class dim last: [N, C, d] -> [N·d, C] rows, targets [N·d].
    reference: (x, t) => classLoss(permuteClassLast(x), t, { logits: true, smoothing: 0.05, ignore: 0 }),
  },
  {
    op: 'nn.functional.nllLoss',
    inputs: [{ shape: [4, 3] }, targets(4, 3)],
    run: (x, t) => F.nllLoss(x, t),
    reference: (x, t) => classLoss(x, t, { logits: false }),
  },
  {
    op: 'nn.functional.nllLoss',
    label: 'ignoreIndex 0, none',
    inputs: [{ shape: [5, 3] }, { shape: [5], kind: 'int', values: [0, 1, 2, 0, 1], noGrad: true }],
    run: (x, t) => F.nllLoss(x, t, { ignoreIndex: 0, reduction: 'none' }),
    reference: (x, t) => classLoss(x, t, { logits: false, ignore: 0, reduction: 'none' }),
  },
  {
    op: 'nn.functional.mseLoss',
    inputs: [{ shape: [3, 4] }, { shape: [3, 4] }],
    sized: (n) => [{ shape: [Math.max(n, 1)] }, { shape: [Math.max(n, 1)] }],
    run: (x, y) => F.mseLoss(x, y),
    reference: elementwise((a, b) => (a - b) ** 2, 'mean'),
  },
  {
    op: 'nn.functional.l1Loss',
    label: 'sum',
    inputs: [{ shape: [3, 4] }, { shape: [3, 4] }],
    run: (x, y) => F.l1Loss(x, y, { reduction: 'sum' }),
    reference: elementwise((a, b) => Math.abs(a - b), 'sum'),
  },
  {
    op: 'nn.functional.smoothL1Loss',
    label: 'beta 0.5, none',
    inputs: [{ shape: [3, 4] }, { shape: [3, 4] }],
    sized: (n) => [{ shape: [n] }, { shape: [n] }],
    run: (x, y) => F.smoothL1Loss(x, y, { beta: 0.5, reduction: 'none' }),
    reference: elementwise((a, b) => {
      const d = Math.abs(a - b);
      return d < 0.5 ? (0.5 * d * d) / 0.5 : d - 0.25;
    }, 'none'),
  },
  {
    op: 'nn.functional.binaryCrossEntropyWithLogits',
    inputs: [
      { shape: [3, 4], low: -4, high: 4 },
      { shape: [3, 4], low: 0, high: 1 },
    ],
    sized: (n) => [{ shape: [Math.max(n, 1)] }, { shape: [Math.max(n, 1)], low: 0, high: 1 }],
    run: (x, y) => F.binaryCrossEntropyWithLogits(x, y),
    reference: elementwise((x, y) => Math.max(x, 0) - x * y + Math.log1p(Math.exp(-Math.abs(x))), 'mean'),
  },
  {
    op: 'nn.functional.huberLoss',
    label: 'delta 0.5, none',
    inputs: [{ shape: [3, 4] }, { shape: [3, 4] }],
    sized: (n) => [{ shape: [n] }, { shape: [n] }],
    run: (x, y) => F.huberLoss(x, y, { delta: 0.5, reduction: 'none' }),
    reference: elementwise((a, b) => {
      const d = Math.abs(a - b);
      return d < 0.5 ? 0.5 * d * d : 0.5 * (d - 0.25);
    }, 'none'),
  },
  {
    op: 'nn.functional.binaryCrossEntropy',
    inputs: [
      { shape: [3, 4], low: 0.05, high: 0.95 },
      { shape: [3, 4], low: 0, high: 1 },
    ],
    sized: (n) => [
      { shape: [Math.max(n, 1)], low: 0.05, high: 0.95 },
      { shape: [Math.max(n, 1)], low: 0, high: 1 },
    ],
    run: (x, y) => F.binaryCrossEntropy(x, y),
    reference: elementwise((x, y) => -(y * Math.max(Math.log(x), -100) + (1 - y) * Math.max(Math.log1p(-x), -100)), 'mean'),
    tol: { bf16: [3e-2, 3e-2] },
  },
  {
    op: 'nn.functional.klDiv',
    label: 'sum',
    inputs: [
      { shape: [3, 4], low: -3, high: -0.1 },
      { shape: [3, 4], low: 0.01, high: 1 },
    ],
    sized: (n) => [
      { shape: [n], low: -3, high: -0.1 },
      { shape: [n], low: 0.01, high: 1 },
    ],
    run: (x, t) => F.klDiv(x, t, { reduction: 'sum' }),
    reference: elementwise((x, t) => (t > 0 ? t * (Math.log(t) - x) : 0), 'sum'),
    tol: { f32: [1e-4, 1e-4] },
  },
];
