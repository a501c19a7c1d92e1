/** Cases for the pooling ops (lib/manifest/nn.ts). */
import * as fl from '../../../lib/index';
import type { Arr, OpCase } from '../harness/types';
import { arr } from './ref';

const F = fl.nn.functional;

interface Pool {
  k: [number, number];
  s?: [number, number];
  p?: [number, number];
  d?: [number, number];
  ceil?: boolean;
  includePad?: boolean;
}

function outSize(n: number, k: number, s: number, p: number, d: number, ceil: boolean): number {
  const span = n + 2 * p - d * (k - 1) - 1;
  let o = (ceil ? Math.ceil(span / s) : Math.floor(span / s)) + 1;
  if (ceil && (o - 1) * s >= n + p) o--;
  return o;
}

/** Max (values and flat h·W+w indices) or average pooling over NCHW. */
function poolRef(x: Arr, kind: 'max' | 'avg', o: Pool): Arr[] {
  const [n, c, h, w] = x.shape;
  const [kh, kw] = o.k,
    [sh, sw] = o.s ?? o.k,
    [ph, pw] = o.p ?? [0, 0],
    [dh, dw] = o.d ?? [1, 1];
  const oh = outSize(h, kh, sh, ph, dh, !!o.ceil),
    ow = outSize(w, kw, sw, pw, dw, !!o.ceil);
  const vals = new Float64Array(n * c * oh * ow),
    idx = new Float64Array(n * c * oh * ow);
  for (let pl = 0; pl < n * c; pl++)
    for (let y = 0; y < oh; y++)
      for (let z = 0; z < ow; z++) {
        let best = -Infinity,
          at = -1,
          s = 0,
          cnt = 0;
        const y0 = y * sh - ph,
          z0 = z * sw - pw;
        for (let i = 0; i < kh; i++)
          for (let j = 0; j < kw; j++) {
            const iy = y0 + i * dh,
              ix = z0 + j * dw;
            if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
            const v = x.data[(pl * h + iy) * w + ix];
            if (v > best || Number.isNaN(v)) {
              best = v;
              at = iy * w + ix;
            }
            s += v;
            cnt++;
          }
        const k = (pl * oh + y) * ow + z;
        vals[k] = kind === 'max' ? best : 0;
        idx[k] = at;
        if (kind === 'avg') {
          // countIncludePad counts padded positions inside the padded input, never past it.
          const hEnd = Math.min(y0 + kh, h + ph),
            wEnd = Math.min(z0 + kw, w + pw);
          const padded = (hEnd - y0) * (wEnd - z0);
          vals[k] = s / (o.includePad ? padded : cnt);
        }
      }
  const shape = [n, c, oh, ow];
  return [arr(shape, vals), arr(shape, idx)];
}

function adaptiveRef(x: Arr, oh: number, ow: number): Arr {
  const [n, c, h, w] = x.shape;
  const out = new Float64Array(n * c * oh * ow);
  for (let pl = 0; pl < n * c; pl++)
    for (let y = 0; y < oh; y++)
      for (let z = 0; z < ow; z++) {
        const h0 = Math.floor((y * h) / oh),
          h1 = Math.ceil(((y + 1) * h) / oh);
        const w0 = Math.floor((z * w) / ow),
          w1 = Math.ceil(((z + 1) * w) / ow);
        let s = 0;
        for (let i = h0; i < h1; i++) for (let j = w0; j < w1; j++) s += x.data[(pl * h + i) * w + j];
        out[(pl * oh + y) * ow + z] = s / ((h1 - h0) * (w1 - w0));
      }
  return arr([n, c, oh, ow], out);
}

export const cases: OpCase[] = [
  {
    op: 'nn.functional.maxPool2d',
    label: '3, stride 2, padding 1',
    inputs: [{ shape: [1, 2, 5, 6] }],
    sized: (n) => [{ shape: [1, 1, 3, n + 2] }],
    run: (x) => F.maxPool2d(x, 3, { stride: 2, padding: 1 }),
    reference: (x) => poolRef(x, 'max', { k: [3, 3], s: [2, 2], p: [1, 1] })[0],
  },
  {
    op: 'nn.functional.maxPool2d',
    label: 'dilation, ceil mode',
    inputs: [{ shape: [1, 2, 6, 5] }],
    run: (x) => F.maxPool2d(x, [3, 2], { stride: [2, 1], dilation: [2, 1], ceilMode: true }),
    reference: (x) => poolRef(x, 'max', { k: [3, 2], s: [2, 1], d: [2, 1], ceil: true })[0],
  },
  {
    op: 'nn.functional.maxPool2d',
    label: 'ties, overlapping windows',
    inputs: [{ shape: [2, 2, 6, 7], values: Array.from({ length: 168 }, (_, i) => (i * 7) % 3) }],
    run: (x) => F.maxPool2d(x, 3, { stride: 1, padding: 1 }),
    reference: (x) => poolRef(x, 'max', { k: [3, 3], s: [1, 1], p: [1, 1] })[0],
    grad: false,
  },
  {
    op: 'nn.functional.maxPool2dWithIndices',
    inputs: [{ shape: [2, 1, 4, 5] }],
    run: (x) => F.maxPool2dWithIndices(x, 2, { stride: 2, ceilMode: true }),
    reference: (x) => poolRef(x, 'max', { k: [2, 2], s: [2, 2], ceil: true }),
  },
  {
    op: 'nn.functional.avgPool2d',
    label: '3, stride 2, padding 1, countIncludePad',
    inputs: [{ shape: [1, 2, 5, 6] }],
    sized: (n) => [{ shape: [1, 1, 3, n + 2] }],
    run: (x) => F.avgPool2d(x, 3, { stride: 2, padding: 1 }),
    reference: (x) => poolRef(x, 'avg', { k: [3, 3], s: [2, 2], p: [1, 1], includePad: true })[0],
  },
  {
    op: 'nn.functional.avgPool2d',
    label: 'ceil mode, padding excluded',
    inputs: [{ shape: [1, 2, 5, 6] }],
    run: (x) => F.avgPool2d(x, [2, 3], { stride: 2, padding: 1, ceilMode: true, countIncludePad: false }),
    reference: (x) => poolRef(x, 'avg', { k: [2, 3], s: [2, 2], p: [1, 1], ceil: true, includePad: false })[0],
  },
  {
    op: 'nn.functional.adaptiveAvgPool2d',
    inputs: [{ shape: [1, 2, 5, 7] }],
    sized: (n) => [{ shape: [1, 1, 2, n + 1] }],
    run: (x) => F.adaptiveAvgPool2d(x, [3, 2]),
    reference: (x) => adaptiveRef(x, 3, 2),
  },
  {
    op: 'nn.functional.adaptiveAvgPool2d',
    label: 'output larger than input (overlapping bins)',
    inputs: [{ shape: [1, 1, 2, 3] }],
    run: (x) => F.adaptiveAvgPool2d(x, [3, 4]),
    reference: (x) => adaptiveRef(x, 3, 4),
  },
];
