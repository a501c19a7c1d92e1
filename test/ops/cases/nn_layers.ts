/** Cases for linear, dropout, embedding and the normalisations (lib/manifest/nn.ts). */
import * as fl from '../../../lib/index';
import type { Arr, OpCase } from '../harness/types';
import { arr, gelu, geluTanh, map, matmul2, sigmoid, silu } from './ref';

const F = fl.nn.functional;
const ACTS: Record<string, (v: number) => number> = {
  none: (v) => v,
  relu: (v) => Math.max(v, 0),
  gelu,
  gelu_tanh: geluTanh,
  silu,
  tanh: Math.tanh,
  sigmoid,
};

function linearRef(x: Arr, w: Arr, b: Arr | null, act: (v: number) => number): Arr {
  const [o, i] = w.shape;
  const lead = x.shape.slice(0, -1);
  const rows = lead.reduce((p, q) => p * q, 1);
  const wt = arr([i, o], (k) => w.data[(k % o) * i + Math.floor(k / o)]);
  const y = matmul2({ shape: [rows, i], data: x.data }, wt);
  return arr([...lead, o], (k) => act(y.data[k] + (b ? b.data[k % o] : 0)));
}

/** Normalises groups of `size` consecutive values (biased variance), then applies the per-`channel` affine. */
function normRef(x: Arr, size: number, eps: number, scale: (k: number) => number, shift: (k: number) => number): Arr {
  const out = new Float64Array(x.data.length);
  for (let g = 0; g < x.data.length / size; g++) {
    const vs = x.data.subarray(g * size, (g + 1) * size);
    const m = vs.reduce((a, v) => a + v, 0) / size;
    const v = vs.reduce((a, u) => a + (u - m) ** 2, 0) / size;
    for (let k = 0; k < size; k++) out[g * size + k] = ((vs[k] - m) / Math.sqrt(v + eps)) * scale(g * size + k) + shift(g * size + k);
  }
  return arr(x.shape, out);
}

/** Batch norm in training mode: statistics per channel over N and the spatial dims. */
function batchNormRef(x: Arr, w: Arr, b: Arr, eps: number): Arr {
  const [n, c] = x.shape;
  const inner = x.data.length / (n * c);
  const out = new Float64Array(x.data.length);
  for (let ch = 0; ch < c; ch++) {
    const at = (s: number, k: number) => (s * c + ch) * inner + k;
    let m = 0;
    for (let s = 0; s < n; s++) for (let k = 0; k < inner; k++) m += x.data[at(s, k)];
    m /= n * inner;
    let v = 0;
    for (let s = 0; s < n; s++) for (let k = 0; k < inner; k++) v += (x.data[at(s, k)] - m) ** 2;
    v /= n * inner;
    for (let s = 0; s < n; s++)
      for (let k = 0; k < inner; k++) out[at(s, k)] = ((x.data[at(s, k)] - m) / Math.sqrt(v + eps)) * w.data[ch] + b.data[ch];
  }
  return arr(x.shape, out);
}

const TOL = { f32: [1e-4, 1e-4] as [number, number] };

export const cases: OpCase[] = [
  ...Object.entries(ACTS).map(
    ([act, f]): OpCase => ({
      op: 'nn.functional.linear',
      label: `activation ${act}`,
      inputs: [{ shape: [3, 4] }, { shape: [5, 4] }, { shape: [5] }],
      sized: (n) => [{ shape: [2, 3] }, { shape: [n, 3] }, { shape: [n] }],
      run: (x, w, b) => F.linear(x, w, b, { activation: act as fl.nn.functional.LinearActivation }),
      reference: (x, w, b) => linearRef(x, w, b, f),
      tol: TOL,
    }),
  ),
  {
    op: 'nn.functional.linear',
    label: 'gelu, 64 outputs (the 16-byte pack path)',
    inputs: [{ shape: [5, 32] }, { shape: [64, 32] }, { shape: [64] }],
    run: (x, w, b) => F.linear(x, w, b, { activation: 'gelu' }),
    reference: (x, w, b) => linearRef(x, w, b, gelu),
    tol: TOL,
  },
  {
    op: 'nn.functional.linear',
    label: '3-d input, no bias',
    inputs: [{ shape: [2, 2, 3] }, { shape: [4, 3] }],
    run: (x, w) => F.linear(x, w),
    reference: (x, w) => linearRef(x, w, null, (v) => v),
    tol: TOL,
  },
  {
    op: 'nn.functional.dropout',
    label: 'p 0.5: each element dropped or doubled',
    inputs: [{ shape: [4, 5], low: 0.5, high: 2 }],
    sized: (n) => [{ shape: [n], low: 0.5, high: 2 }],
    run: (x) => {
      const y = F.dropout(x, 0.5, true);
      return fl.logicalOr(y.eq(0), y.sub(x.mul(2)).abs().le(x.abs().mul(1e-2)));
    },
    reference: (x) => map(x, () => 1),
    grad: false,
  },
  {
    op: 'nn.functional.dropout',
    label: 'p 0.3: the kept share is near 0.7',
    inputs: [{ shape: [40, 50], low: 0.5, high: 2 }],
    run: (x) => F.dropout(x, 0.3, true).ne(0).to('f64').mean().sub(0.7).abs().lt(0.05),
    reference: () => arr([], [1]),
    grad: false,
  },
  {
    op: 'nn.functional.dropout',
    label: 'not training: the input',
    inputs: [{ shape: [3, 4] }],
    run: (x) => F.dropout(x, 0.3, false).mul(1),
    reference: (x) => map(x, (v) => v),
  },
  {
    op: 'nn.functional.embedding',
    inputs: [{ shape: [2, 3], kind: 'int', high: 5, noGrad: true }, { shape: [5, 4] }],
    sized: (n) => [{ shape: [n], kind: 'int', high: 7, noGrad: true }, { shape: [7, 3] }],
    run: (i, w) => F.embedding(i, w),
    reference: (i, w) => {
      const d = w.shape[1];
      return arr([...i.shape, d], (k) => w.data[i.data[Math.floor(k / d)] * d + (k % d)]);
    },
  },
  {
    op: 'nn.functional.embedding',
    label: 'integer and bool weights',
    inputs: [
      { shape: [2, 3], kind: 'int', high: 5, noGrad: true },
      { shape: [5, 4], low: 0, high: 2 },
    ],
    run: (i, w) => F.embedding(i, w),
    reference: (i, w) => {
      const d = w.shape[1];
      return arr([...i.shape, d], (k) => w.data[i.data[Math.floor(k / d)] * d + (k % d)]);
    },
    dtypes: ['i32', 'i64', 'u8', 'bool'],
    grad: false,
  },
  {
    op: 'nn.functional.batchNorm',
    label: 'training, affine',
    inputs: [{ shape: [3, 2, 2, 2] }, { shape: [2] }, { shape: [2] }],
    run: (x, w, b) => F.batchNorm(x, null, null, { weight: w, bias: b, training: true, eps: 1e-5 }),
    reference: (x, w, b) => batchNormRef(x, w, b, 1e-5),
    tol: TOL,
  },
  {
    op: 'nn.functional.layerNorm',
    label: 'affine',
    inputs: [{ shape: [3, 5] }, { shape: [5] }, { shape: [5] }],
    sized: (n) => [{ shape: [2, n + 1] }, { shape: [n + 1] }, { shape: [n + 1] }],
    run: (x, w, b) => F.layerNorm(x, [x.shape[1]], w, b),
    reference: (x, w, b) => {
      const d = x.shape[1];
      return normRef(
        x,
        d,
        1e-5,
        (k) => w.data[k % d],
        (k) => b.data[k % d],
      );
    },
    tol: TOL,
  },
  {
    op: 'nn.functional.layerNorm',
    label: 'over the last two dims, no affine',
    inputs: [{ shape: [2, 3, 2], low: 5, high: 9 }],
    run: (x) => F.layerNorm(x, [3, 2]),
    reference: (x) =>
      normRef(
        x,
        6,
        1e-5,
        () => 1,
        () => 0,
      ),
    tol: TOL,
  },
  {
    op: 'nn.functional.layerNorm',
    label: 'rows of 2050 (block rows)',
    inputs: [{ shape: [3, 2050], low: 6, high: 14 }],
    run: (x) => F.layerNorm(x, [2050]),
    reference: (x) =>
      normRef(
        x,
        2050,
        1e-5,
        () => 1,
        () => 0,
      ),
    tol: TOL,
  },
  {
    op: 'nn.functional.groupNorm',
    label: '1 group over [4, 33, 35]',
    inputs: [{ shape: [2, 4, 33, 35] }],
    run: (x) => F.groupNorm(x, 1),
    reference: (x) =>
      normRef(
        x,
        4 * 33 * 35,
        1e-5,
        () => 1,
        () => 0,
      ),
    tol: TOL,
  },
  {
    op: 'nn.functional.groupNorm',
    label: '2 groups, affine',
    inputs: [{ shape: [2, 4, 3] }, { shape: [4] }, { shape: [4] }],
    run: (x, w, b) => F.groupNorm(x, 2, w, b),
    reference: (x, w, b) =>
      normRef(
        x,
        6,
        1e-5,
        (k) => w.data[Math.floor(k / 3) % 4],
        (k) => b.data[Math.floor(k / 3) % 4],
      ),
    tol: TOL,
  },
];
