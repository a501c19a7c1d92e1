/** Cases for the 1-d convolutions and pools (lib/manifest/nn_1d.ts), against the 2-d references on [N, C, 1, L]. */
import * as fl from '../../../lib/index';
import type { Arr, OpCase } from '../harness/types';
import { arr } from './ref';
import { conv2dRef, convTransposeRef } from './nn_conv';

const F = fl.nn.functional;
const as4d = (a: Arr): Arr => ({ shape: [a.shape[0], a.shape[1], 1, a.shape[2]], data: a.data });
const as3d = (a: Arr): Arr => ({ shape: [a.shape[0], a.shape[1], a.shape[3]], data: a.data });
const TOL = { f32: [1e-4, 1e-4] as [number, number] };

interface Pool {
  k: number;
  s?: number;
  p?: number;
  d?: number;
  ceil?: boolean;
  includePad?: boolean;
}

/** Max (values and argmax in L) or average pooling over the last dim of [N, C, L]. */
function pool1dRef(x: Arr, kind: 'max' | 'avg', o: Pool): Arr[] {
  const [n, c, len] = x.shape;
  const s = o.s ?? o.k,
    p = o.p ?? 0,
    d = o.d ?? 1;
  const span = len + 2 * p - d * (o.k - 1) - 1;
  let out = (o.ceil ? Math.ceil(span / s) : Math.floor(span / s)) + 1;
  if (o.ceil && (out - 1) * s >= len + p) out--;
  const vals = new Float64Array(n * c * out),
    idx = new Float64Array(n * c * out);
  for (let r = 0; r < n * c; r++)
    for (let j = 0; j < out; j++) {
      const start = j * s - p;
      let best = -Infinity,
        at = -1,
        sum = 0,
        cnt = 0;
      for (let i = 0; i < o.k; i++) {
        const q = start + i * d;
        if (q < 0 || q >= len) continue;
        const v = x.data[r * len + q];
        if (v > best) {
          best = v;
          at = q;
        }
        sum += v;
        cnt++;
      }
      const divisor = o.includePad ? Math.min(start + o.k, len + p) - start : cnt;
      vals[r * out + j] = kind === 'max' ? best : sum / divisor;
      idx[r * out + j] = at;
    }
  return [arr([n, c, out], vals), arr([n, c, out], idx)];
}

function adaptive1dRef(x: Arr, out: number): Arr {
  const [n, c, len] = x.shape;
  return arr([n, c, out], (i) => {
    const r = Math.floor(i / out),
      j = i % out;
    const a = Math.floor((j * len) / out),
      b = Math.ceil(((j + 1) * len) / out);
    let s = 0;
    for (let q = a; q < b; q++) s += x.data[r * len + q];
    return s / (b - a);
  });
}

export const cases: OpCase[] = [
  {
    op: 'nn.functional.conv1d',
    label: 'k 3, padding 1, bias',
    inputs: [{ shape: [2, 3, 7] }, { shape: [4, 3, 3] }, { shape: [4] }],
    sized: (n) => [{ shape: [1, 2, n + 2] }, { shape: [3, 2, 3] }, { shape: [3] }],
    run: (x, w, b) => F.conv1d(x, w, b, { padding: 1 }),
    reference: (x, w, b) => as3d(conv2dRef(as4d(x), as4d(w), b, { padding: [0, 1] })),
    tol: TOL,
  },
  {
    op: 'nn.functional.conv1d',
    label: 'stride 2, dilation 2, groups 2, no bias',
    inputs: [{ shape: [2, 4, 11] }, { shape: [6, 2, 3] }],
    run: (x, w) => F.conv1d(x, w, null, { stride: 2, padding: 2, dilation: 2, groups: 2 }),
    reference: (x, w) => as3d(conv2dRef(as4d(x), as4d(w), null, { stride: [1, 2], padding: [0, 2], dilation: [1, 2], groups: 2 })),
    tol: TOL,
  },
  {
    op: 'nn.functional.convTranspose1d',
    label: 'stride 2, padding 1, outputPadding 1, groups 2, bias',
    inputs: [{ shape: [2, 4, 5] }, { shape: [4, 3, 3] }, { shape: [6] }],
    sized: (n) => [{ shape: [1, 2, n + 1] }, { shape: [2, 2, 3] }, { shape: [4] }],
    run: (x, w, b) => F.convTranspose1d(x, w, b, { stride: 2, padding: 1, outputPadding: 1, groups: 2 }),
    reference: (x, w, b) =>
      as3d(convTransposeRef(as4d(x), as4d(w), b, { stride: [1, 2], padding: [0, 1], outputPadding: [0, 1], groups: 2 })),
    tol: TOL,
  },
  {
    op: 'nn.functional.maxPool1d',
    label: '3, stride 2, padding 1, ceil mode',
    inputs: [{ shape: [2, 3, 8] }],
    sized: (n) => [{ shape: [1, 2, n + 2] }],
    run: (x) => F.maxPool1d(x, 3, { stride: 2, padding: 1, ceilMode: true }),
    reference: (x) => pool1dRef(x, 'max', { k: 3, s: 2, p: 1, ceil: true })[0],
  },
  {
    op: 'nn.functional.maxPool1dWithIndices',
    label: '2, dilation 2, padding 1',
    inputs: [{ shape: [2, 2, 9] }],
    run: (x) => F.maxPool1dWithIndices(x, 2, { stride: 1, padding: 1, dilation: 2 }),
    reference: (x) => pool1dRef(x, 'max', { k: 2, s: 1, p: 1, d: 2 }),
  },
  {
    op: 'nn.functional.avgPool1d',
    label: '4, stride 3, padding 2, ceil mode, countIncludePad',
    inputs: [{ shape: [2, 3, 9] }],
    sized: (n) => [{ shape: [1, 2, n + 3] }],
    run: (x) => F.avgPool1d(x, 4, { stride: 3, padding: 2, ceilMode: true }),
    reference: (x) => pool1dRef(x, 'avg', { k: 4, s: 3, p: 2, ceil: true, includePad: true })[0],
  },
  {
    op: 'nn.functional.avgPool1d',
    label: 'padding excluded',
    inputs: [{ shape: [1, 2, 7] }],
    run: (x) => F.avgPool1d(x, 3, { stride: 2, padding: 1, countIncludePad: false }),
    reference: (x) => pool1dRef(x, 'avg', { k: 3, s: 2, p: 1, includePad: false })[0],
  },
  {
    op: 'nn.functional.adaptiveAvgPool1d',
    inputs: [{ shape: [2, 3, 10] }],
    sized: (n) => [{ shape: [1, 2, n + 1] }],
    run: (x) => F.adaptiveAvgPool1d(x, 4),
    reference: (x) => adaptive1dRef(x, 4),
  },
  {
    op: 'nn.functional.adaptiveAvgPool1d',
    label: 'output longer than the input',
    inputs: [{ shape: [1, 2, 3] }],
    run: (x) => F.adaptiveAvgPool1d(x, 7),
    reference: (x) => adaptive1dRef(x, 7),
  },
];
