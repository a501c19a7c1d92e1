/** Cases of the recurrent cells (lib/manifest/rnn.ts) against a plain f64 step. */
import * as fl from '../../../lib/index';
import type { Arr, InputSpec, OpCase } from '../harness/types';
import { arr } from './ref';

const F = fl.nn.functional;
const sigmoid = (v: number) => 1 / (1 + Math.exp(-v));
const I = 3;
const H = 4;

/** Pre-activations of gate k at (row b, unit j) from x·W_ihᵀ + b_ih and h·W_hhᵀ + b_hh, apart. */
function projections(x: Arr, h: Arr, wi: Arr, wh: Arr, bi: Arr, bh: Arr) {
  const B = x.shape[0];
  const G = wi.shape[0];
  const dot = (a: Arr, w: Arr, n: number, b: number, r: number) => {
    let s = 0;
    for (let k = 0; k < n; k++) s += a.data[b * n + k] * w.data[r * n + k];
    return s;
  };
  const xs = arr([B, G], (e) => dot(x, wi, I, Math.floor(e / G), e % G) + bi.data[e % G]);
  const hs = arr([B, G], (e) => dot(h, wh, H, Math.floor(e / G), e % G) + bh.data[e % G]);
  return { B, G, xs, hs };
}

function elman(act: (v: number) => number) {
  return (x: Arr, h: Arr, wi: Arr, wh: Arr, bi: Arr, bh: Arr): Arr => {
    const { xs, hs } = projections(x, h, wi, wh, bi, bh);
    return arr(h.shape, (e) => act(xs.data[e] + hs.data[e]));
  };
}

function lstm(x: Arr, h: Arr, c: Arr, wi: Arr, wh: Arr, bi: Arr, bh: Arr): Arr[] {
  const { G, xs, hs } = projections(x, h, wi, wh, bi, bh);
  const pre = (e: number, k: number) => {
    const at = Math.floor(e / H) * G + k * H + (e % H);
    return xs.data[at] + hs.data[at];
  };
  const cn = arr(c.shape, (e) => sigmoid(pre(e, 1)) * c.data[e] + sigmoid(pre(e, 0)) * Math.tanh(pre(e, 2)));
  return [arr(h.shape, (e) => sigmoid(pre(e, 3)) * Math.tanh(cn.data[e])), cn];
}

function gru(x: Arr, h: Arr, wi: Arr, wh: Arr, bi: Arr, bh: Arr): Arr {
  const { G, xs, hs } = projections(x, h, wi, wh, bi, bh);
  return arr(h.shape, (e) => {
    const at = (k: number) => Math.floor(e / H) * G + k * H + (e % H);
    const r = sigmoid(xs.data[at(0)] + hs.data[at(0)]);
    const z = sigmoid(xs.data[at(1)] + hs.data[at(1)]);
    const n = Math.tanh(xs.data[at(2)] + r * hs.data[at(2)]);
    return (1 - z) * n + z * h.data[e];
  });
}

/** input, state(s), weights and biases of a cell with `gates` gates over a batch of b. */
function specs(gates: number, states: number, b: number): InputSpec[] {
  return [
    { shape: [b, I] },
    ...Array.from({ length: states }, () => ({ shape: [b, H] })),
    { shape: [gates * H, I], low: -0.7, high: 0.7 },
    { shape: [gates * H, H], low: -0.7, high: 0.7 },
    { shape: [gates * H] },
    { shape: [gates * H] },
  ];
}

const TOL = { f32: [1e-5, 1e-5], bf16: [6e-2, 6e-2], f16: [1e-2, 1e-2] } as OpCase['tol'];

export const cases: OpCase[] = [
  {
    op: 'nn.functional.rnnTanhCell',
    inputs: specs(1, 1, 5),
    sized: (n) => specs(1, 1, n),
    run: (x, h, wi, wh, bi, bh) => F.rnnTanhCell(x, h, wi, wh, bi, bh),
    reference: elman(Math.tanh),
    tol: TOL,
  },
  {
    op: 'nn.functional.rnnReluCell',
    inputs: specs(1, 1, 5),
    sized: (n) => specs(1, 1, n),
    run: (x, h, wi, wh, bi, bh) => F.rnnReluCell(x, h, wi, wh, bi, bh),
    reference: elman((v) => Math.max(v, 0)),
    tol: TOL,
  },
  {
    op: 'nn.functional.lstmCell',
    inputs: specs(4, 2, 5),
    sized: (n) => specs(4, 2, n),
    run: (x, h, c, wi, wh, bi, bh) => F.lstmCell(x, [h, c], wi, wh, bi, bh),
    reference: lstm,
    tol: TOL,
  },
  {
    op: 'nn.functional.gruCell',
    inputs: specs(3, 1, 5),
    sized: (n) => specs(3, 1, n),
    run: (x, h, wi, wh, bi, bh) => F.gruCell(x, h, wi, wh, bi, bh),
    reference: gru,
    tol: TOL,
  },
];
