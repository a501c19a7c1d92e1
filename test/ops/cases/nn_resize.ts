/** Cases for F.pad and F.interpolate (lib/manifest/nn_resize.ts): every output element read from its source index. */
import * as fl from '../../../lib/index';
import type { Arr, OpCase } from '../harness/types';
import { arr, strides } from './ref';

const F = fl.nn.functional;
type Mode = 'constant' | 'reflect' | 'replicate' | 'circular';

/** The source of position j of a dim of size n padded by (a, b), or -1 for the constant fill. */
function padSource(j: number, n: number, a: number, b: number, mode: Mode): number {
  const i = j - a;
  if (mode === 'constant') return i >= 0 && i < n ? i : -1;
  if (mode === 'replicate') return Math.min(Math.max(i, 0), n - 1);
  if (mode === 'reflect') {
    const r = Math.abs(i);
    return r < n ? r : 2 * (n - 1) - r;
  }
  const lo = Math.max(-a, 0),
    kept = n - lo - Math.max(-b, 0);
  return lo + ((((j - Math.max(a, 0)) % kept) + kept) % kept);
}

function padRef(x: Arr, pad: number[], mode: Mode, value = 0): Arr {
  const k = pad.length / 2;
  const nd = x.shape.length;
  const amount = (d: number): [number, number] => (d >= nd - k ? [pad[2 * (nd - 1 - d)], pad[2 * (nd - 1 - d) + 1]] : [0, 0]);
  const shape = x.shape.map((s, d) => s + amount(d)[0] + amount(d)[1]);
  const os = strides(shape),
    is = strides(x.shape);
  return arr(shape, (i) => {
    let at = 0;
    for (let d = 0; d < nd; d++) {
      const [a, b] = amount(d);
      const src = padSource(Math.floor(i / os[d]) % shape[d], x.shape[d], a, b, mode);
      if (src < 0) return value;
      at += src * is[d];
    }
    return x.data[at];
  });
}

/** Resampling one dim at a time, as interpolate: each output element a weighted sum of input rows. */
function resampleRef(x: Arr, out: number[], rowsOf: (n: number, m: number, dim: number) => [number, number][][]): Arr {
  let cur = x;
  out.forEach((m, i) => {
    const d = 2 + i,
      n = cur.shape[d];
    const taps = rowsOf(n, m, i);
    const shape = cur.shape.map((s, j) => (j === d ? m : s));
    const os = strides(shape),
      is = strides(cur.shape);
    const src = cur;
    cur = arr(shape, (k) => {
      const j = Math.floor(k / os[d]) % m;
      const base = k - j * os[d];
      // base's index along every other dim is the same in the input.
      let inBase = 0;
      for (let e = 0; e < shape.length; e++) if (e !== d) inBase += (Math.floor(base / os[e]) % shape[e]) * is[e];
      return taps[j].reduce((s, [r, w]) => s + w * src.data[inBase + r * is[d]], 0);
    });
  });
  return cur;
}

/** PyTorch's nearest rows in f32 arithmetic (the 2-D and f32 kernels'). */
const nearest = (n: number, m: number) =>
  Array.from({ length: m }, (_, j): [number, number][] => [
    [m === 2 * n ? j >> 1 : Math.min(Math.floor(Math.fround(j * Math.fround(n / m))), n - 1), 1],
  ]);

const linear = (align: boolean, factors?: number[]) => (n: number, m: number, dim: number) => {
  if (m === n) return Array.from({ length: m }, (_, j): [number, number][] => [[j, 1]]);
  const scale = align ? (m > 1 ? (n - 1) / (m - 1) : 0) : factors ? 1 / factors[dim] : n / m;
  return Array.from({ length: m }, (_, j): [number, number][] => {
    const src = align ? scale * j : Math.max(scale * (j + 0.5) - 0.5, 0);
    const lo = Math.min(Math.floor(src), n - 1);
    const w = Math.min(Math.max(src - lo, 0), 1);
    return [
      [lo, 1 - w],
      [lo < n - 1 ? lo + 1 : lo, w],
    ];
  });
};

const TOL = { f32: [1e-5, 1e-5] as [number, number] };

export const cases: OpCase[] = [
  {
    op: 'nn.functional.pad',
    label: 'constant, negative pads crop',
    inputs: [{ shape: [2, 3, 4, 5] }],
    sized: (n) => [{ shape: [1, 2, n + 1] }],
    run: (x) => (x.ndim === 4 ? F.pad(x, [2, -1, -1, 1], { value: 0.5 }) : F.pad(x, [2, -1], { value: 0.5 })),
    reference: (x) => (x.shape.length === 4 ? padRef(x, [2, -1, -1, 1], 'constant', 0.5) : padRef(x, [2, -1], 'constant', 0.5)),
  },
  {
    op: 'nn.functional.pad',
    label: 'constant on i64',
    inputs: [{ shape: [3, 4], kind: 'int' }],
    dtypes: ['f32'],
    run: (x) => F.pad(x, [1, 1, 2, 0], { value: 7 }),
    reference: (x) => padRef(x, [1, 1, 2, 0], 'constant', 7),
    exact: true,
    grad: false,
  },
  {
    op: 'nn.functional.pad',
    label: 'reflect, 2-d',
    inputs: [{ shape: [2, 2, 5, 6] }],
    run: (x) => F.pad(x, [2, 3, 4, 1], { mode: 'reflect' }),
    reference: (x) => padRef(x, [2, 3, 4, 1], 'reflect'),
  },
  {
    op: 'nn.functional.pad',
    label: 'replicate, 1-d on a 2-D input',
    inputs: [{ shape: [3, 5] }],
    sized: (n) => [{ shape: [2, n + 1] }],
    run: (x) => F.pad(x, [3, 2], { mode: 'replicate' }),
    reference: (x) => padRef(x, [3, 2], 'replicate'),
  },
  {
    op: 'nn.functional.pad',
    label: 'circular, 3-d with a negative pad',
    inputs: [{ shape: [1, 2, 3, 4, 5] }],
    run: (x) => F.pad(x, [2, -1, 1, 1, 0, 2], { mode: 'circular' }),
    reference: (x) => padRef(x, [2, -1, 1, 1, 0, 2], 'circular'),
  },
  {
    op: 'nn.functional.interpolate',
    label: 'nearest 2-d, size',
    inputs: [{ shape: [2, 3, 4, 5] }],
    run: (x) => F.interpolate(x, { size: [7, 3] }),
    reference: (x) => resampleRef(x, [7, 3], nearest),
  },
  {
    op: 'nn.functional.interpolate',
    label: 'nearest 2-d, u8 images',
    inputs: [{ shape: [1, 3, 4, 5], low: 0, high: 250 }],
    run: (x) => F.interpolate(x, { size: [7, 3] }),
    reference: (x) => resampleRef(x, [7, 3], nearest),
    dtypes: ['u8'],
    grad: false,
  },
  {
    op: 'nn.functional.interpolate',
    label: 'linear, 3-D',
    inputs: [{ shape: [2, 3, 5] }],
    sized: (n) => [{ shape: [1, 2, n + 1] }],
    run: (x) => F.interpolate(x, { size: 9, mode: 'linear' }),
    reference: (x) => resampleRef(x, [9], linear(false)),
    // f32 inputs index in f32 as PyTorch's kernel (128 -> 9 moves a value by ~1e-5 from this f64 index math).
    tol: { f32: [1e-4, 1e-4] },
  },
  {
    op: 'nn.functional.interpolate',
    label: 'bilinear, alignCorners',
    inputs: [{ shape: [1, 2, 3, 4] }],
    run: (x) => F.interpolate(x, { size: [5, 7], mode: 'bilinear', alignCorners: true }),
    reference: (x) => resampleRef(x, [5, 7], linear(true)),
    tol: TOL,
  },
  {
    op: 'nn.functional.interpolate',
    label: 'bilinear, scaleFactor [1.5, 0.75]',
    inputs: [{ shape: [1, 2, 4, 6] }],
    run: (x) => F.interpolate(x, { scaleFactor: [1.5, 0.75], mode: 'bilinear' }),
    reference: (x) => resampleRef(x, [6, 4], linear(false, [1.5, 0.75])),
    tol: TOL,
  },
];
