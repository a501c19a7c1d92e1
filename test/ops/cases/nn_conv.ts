/** Cases for conv2d and convTranspose2d (lib/manifest/nn.ts). */
import * as fl from '../../../lib/index';
import type { Arr, OpCase } from '../harness/types';
import { arr } from './ref';

const F = fl.nn.functional;

interface Geom {
  stride?: [number, number];
  padding?: [number, number];
  dilation?: [number, number];
  groups?: number;
}

/** Direct convolution: x [N, C, H, W], w [OC, C/g, KH, KW], optional bias [OC]. */
export function conv2dRef(x: Arr, w: Arr, b: Arr | null, g: Geom): Arr {
  const [n, c, h, wd] = x.shape;
  const [oc, cg, kh, kw] = w.shape;
  const [sh, sw] = g.stride ?? [1, 1],
    [ph, pw] = g.padding ?? [0, 0],
    [dh, dw] = g.dilation ?? [1, 1];
  const groups = g.groups ?? 1;
  const oh = Math.floor((h + 2 * ph - dh * (kh - 1) - 1) / sh) + 1;
  const ow = Math.floor((wd + 2 * pw - dw * (kw - 1) - 1) / sw) + 1;
  const ocg = oc / groups;
  const out = new Float64Array(n * oc * oh * ow);
  for (let b0 = 0; b0 < n; b0++)
    for (let o = 0; o < oc; o++) {
      const grp = Math.floor(o / ocg);
      for (let y = 0; y < oh; y++)
        for (let z = 0; z < ow; z++) {
          let s = b ? b.data[o] : 0;
          for (let ci = 0; ci < cg; ci++) {
            const ch = grp * cg + ci;
            for (let i = 0; i < kh; i++)
              for (let j = 0; j < kw; j++) {
                const iy = y * sh - ph + i * dh,
                  ix = z * sw - pw + j * dw;
                if (iy < 0 || iy >= h || ix < 0 || ix >= wd) continue;
                s += x.data[((b0 * c + ch) * h + iy) * wd + ix] * w.data[((o * cg + ci) * kh + i) * kw + j];
              }
          }
          out[((b0 * oc + o) * oh + y) * ow + z] = s;
        }
    }
  return arr([n, oc, oh, ow], out);
}

/** Transposed convolution: x [N, C, H, W], w [C, OC/g, KH, KW]; each input pixel scatters into the output. */
export function convTransposeRef(x: Arr, w: Arr, b: Arr | null, g: Geom & { outputPadding?: [number, number] }): Arr {
  const [n, c, h, wd] = x.shape;
  const [, ocg, kh, kw] = w.shape;
  const groups = g.groups ?? 1;
  const oc = ocg * groups,
    cg = c / groups;
  const [sh, sw] = g.stride ?? [1, 1],
    [ph, pw] = g.padding ?? [0, 0],
    [dh, dw] = g.dilation ?? [1, 1],
    [oph, opw] = g.outputPadding ?? [0, 0];
  const oh = (h - 1) * sh - 2 * ph + dh * (kh - 1) + oph + 1;
  const ow = (wd - 1) * sw - 2 * pw + dw * (kw - 1) + opw + 1;
  const out = new Float64Array(n * oc * oh * ow);
  for (let b0 = 0; b0 < n; b0++)
    for (let ch = 0; ch < c; ch++) {
      const grp = Math.floor(ch / cg);
      for (let y = 0; y < h; y++)
        for (let z = 0; z < wd; z++) {
          const v = x.data[((b0 * c + ch) * h + y) * wd + z];
          for (let o = 0; o < ocg; o++)
            for (let i = 0; i < kh; i++)
              for (let j = 0; j < kw; j++) {
                const oy = y * sh - ph + i * dh,
                  ox = z * sw - pw + j * dw;
                if (oy < 0 || oy >= oh || ox < 0 || ox >= ow) continue;
                out[((b0 * oc + grp * ocg + o) * oh + oy) * ow + ox] += v * w.data[((ch * ocg + o) * kh + i) * kw + j];
              }
        }
    }
  if (b) for (let i = 0; i < out.length; i++) out[i] += b.data[Math.floor(i / (oh * ow)) % oc];
  return arr([n, oc, oh, ow], out);
}

const TOL = { f32: [1e-4, 1e-4] as [number, number] };

export const cases: OpCase[] = [
  {
    op: 'nn.functional.conv2d',
    label: '3x3, padding 1, bias',
    inputs: [{ shape: [1, 2, 4, 5] }, { shape: [3, 2, 3, 3] }, { shape: [3] }],
    sized: (n) => [{ shape: [1, 2, 3, n + 2] }, { shape: [2, 2, 3, 3] }, { shape: [2] }],
    run: (x, w, b) => F.conv2d(x, w, b, { padding: 1 }),
    reference: (x, w, b) => conv2dRef(x, w, b, { padding: [1, 1] }),
    tol: TOL,
  },
  {
    op: 'nn.functional.conv2d',
    label: 'stride 2, padding [1, 2], dilation [2, 1], no bias',
    inputs: [{ shape: [2, 2, 6, 5] }, { shape: [2, 2, 2, 2] }],
    run: (x, w) => F.conv2d(x, w, null, { stride: 2, padding: [1, 2], dilation: [2, 1] }),
    reference: (x, w) => conv2dRef(x, w, null, { stride: [2, 2], padding: [1, 2], dilation: [2, 1] }),
    tol: TOL,
  },
  {
    op: 'nn.functional.conv2d',
    label: 'groups 2',
    inputs: [{ shape: [1, 4, 4, 4] }, { shape: [2, 2, 2, 2] }, { shape: [2] }],
    run: (x, w, b) => F.conv2d(x, w, b, { groups: 2 }),
    reference: (x, w, b) => conv2dRef(x, w, b, { groups: 2 }),
    tol: TOL,
  },
  {
    op: 'nn.functional.conv2d',
    label: 'depthwise',
    inputs: [{ shape: [1, 5, 13, 7] }, { shape: [5, 1, 3, 3] }, { shape: [5] }],
    run: (x, w, b) => F.conv2d(x, w, b, { groups: 5, padding: 1 }),
    reference: (x, w, b) => conv2dRef(x, w, b, { groups: 5, padding: [1, 1] }),
    tol: TOL,
  },
  {
    op: 'nn.functional.conv2d',
    label: '1x1, 130 output channels',
    inputs: [{ shape: [2, 70, 5, 5] }, { shape: [130, 70, 1, 1], low: -0.3, high: 0.3 }, { shape: [130] }],
    run: (x, w, b) => F.conv2d(x, w, b),
    reference: (x, w, b) => conv2dRef(x, w, b, {}),
    tol: { f32: [1e-4, 1e-4] },
  },
  {
    op: 'nn.functional.conv2d',
    label: '5x5 over a batch of 8 (the weight gradient splits the batch)',
    inputs: [{ shape: [8, 3, 16, 16] }, { shape: [4, 3, 5, 5], low: -0.3, high: 0.3 }, { shape: [4] }],
    run: (x, w, b) => F.conv2d(x, w, b),
    reference: (x, w, b) => conv2dRef(x, w, b, {}),
    tol: { f32: [1e-4, 1e-4] },
  },
  {
    op: 'nn.functional.conv2d',
    label: 'stride 3, larger than the kernel',
    inputs: [{ shape: [2, 2, 10, 11] }, { shape: [3, 2, 2, 2] }],
    run: (x, w) => F.conv2d(x, w, null, { stride: 3, padding: 1 }),
    reference: (x, w) => conv2dRef(x, w, null, { stride: [3, 3], padding: [1, 1] }),
    tol: TOL,
  },
  {
    op: 'nn.functional.convTranspose2d',
    label: 'stride 2, padding 1, outputPadding 1, bias',
    inputs: [{ shape: [1, 2, 3, 3] }, { shape: [2, 3, 3, 3] }, { shape: [3] }],
    run: (x, w, b) => F.convTranspose2d(x, w, b, { stride: 2, padding: 1, outputPadding: 1 }),
    reference: (x, w, b) => convTransposeRef(x, w, b, { stride: [2, 2], padding: [1, 1], outputPadding: [1, 1] }),
    tol: TOL,
  },
  {
    op: 'nn.functional.convTranspose2d',
    label: 'groups 2, no bias',
    inputs: [{ shape: [2, 4, 2, 3] }, { shape: [4, 1, 2, 2] }],
    run: (x, w) => F.convTranspose2d(x, w, null, { groups: 2 }),
    reference: (x, w) => convTransposeRef(x, w, null, { groups: 2 }),
    tol: TOL,
  },
];
