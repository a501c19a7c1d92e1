/** f64 reference building blocks for the conformance cases: plain loops over row-major arrays. */
import type { Arr } from '../harness/types';

export function arr(shape: number[], data: ArrayLike<number> | ((i: number) => number)): Arr {
  const n = shape.reduce((a, b) => a * b, 1);
  const d = typeof data === 'function' ? Float64Array.from({ length: n }, (_, i) => data(i)) : Float64Array.from(data);
  return { shape: [...shape], data: d };
}

export function strides(shape: readonly number[]): number[] {
  const s = new Array<number>(shape.length).fill(1);
  for (let d = shape.length - 2; d >= 0; d--) s[d] = s[d + 1] * shape[d + 1];
  return s;
}

export function map(x: Arr, f: (v: number) => number): Arr {
  return { shape: [...x.shape], data: x.data.map(f) };
}

export function broadcastShape(a: readonly number[], b: readonly number[]): number[] {
  const n = Math.max(a.length, b.length);
  return Array.from({ length: n }, (_, i) => {
    const x = a[a.length - n + i] ?? 1,
      y = b[b.length - n + i] ?? 1;
    return x === 1 ? y : x;
  });
}

/** The flat index into `shape` (broadcast to `out`) of each element of `out`. */
function broadcastIndex(shape: readonly number[], out: readonly number[]): (i: number) => number {
  const os = strides(out),
    is = strides(shape);
  const off = out.length - shape.length;
  return (i) => {
    let k = 0;
    for (let d = 0; d < out.length; d++) {
      const c = Math.floor(i / os[d]) % out[d];
      const sd = d - off;
      if (sd >= 0 && shape[sd] !== 1) k += c * is[sd];
    }
    return k;
  };
}

export function zip(a: Arr, b: Arr, f: (x: number, y: number) => number): Arr {
  const shape = broadcastShape(a.shape, b.shape);
  const ia = broadcastIndex(a.shape, shape),
    ib = broadcastIndex(b.shape, shape);
  return arr(shape, (i) => f(a.data[ia(i)], b.data[ib(i)]));
}

export function zip3(a: Arr, b: Arr, c: Arr, f: (x: number, y: number, z: number) => number): Arr {
  const shape = broadcastShape(broadcastShape(a.shape, b.shape), c.shape);
  const ia = broadcastIndex(a.shape, shape),
    ib = broadcastIndex(b.shape, shape),
    ic = broadcastIndex(c.shape, shape);
  return arr(shape, (i) => f(a.data[ia(i)], b.data[ib(i)], c.data[ic(i)]));
}

/**
 * Reduces `x` over `dims` (all when empty): `f` receives each group's values in order.
 */
export function reduce(x: Arr, dims: number[] | undefined, keepdim: boolean, f: (vs: number[]) => number): Arr {
  const nd = x.shape.length;
  const ds = (dims === undefined || dims.length === 0 ? x.shape.map((_, i) => i) : dims).map((d) => (d < 0 ? d + nd : d));
  const outShape = x.shape.map((s, d) => (ds.includes(d) ? 1 : s));
  const groups = new Map<number, number[]>();
  const st = strides(x.shape),
    os = strides(outShape);
  const n = outShape.reduce((a, b) => a * b, 1);
  for (let o = 0; o < n; o++) groups.set(o, []);
  for (let i = 0; i < x.data.length; i++) {
    let o = 0;
    for (let d = 0; d < nd; d++) if (!ds.includes(d)) o += (Math.floor(i / st[d]) % x.shape[d]) * os[d];
    groups.get(o)?.push(x.data[i]);
  }
  const data = Array.from({ length: n }, (_, o) => f(groups.get(o) ?? []));
  const shape = keepdim ? outShape : x.shape.filter((_, d) => !ds.includes(d));
  return arr(shape, data);
}

/** Moves `dim` last: returns the rows along it, and a function putting rows back. */
export function rows(x: Arr, dim: number): { rows: number[][]; put: (rs: number[][], size?: number) => Arr } {
  const nd = x.shape.length;
  const d = dim < 0 ? dim + nd : dim;
  const outer = x.shape.slice(0, d).reduce((a, b) => a * b, 1);
  const len = x.shape[d];
  const inner = x.shape.slice(d + 1).reduce((a, b) => a * b, 1);
  const rs: number[][] = [];
  for (let o = 0; o < outer; o++)
    for (let i = 0; i < inner; i++) rs.push(Array.from({ length: len }, (_, k) => x.data[(o * len + k) * inner + i]));
  const put = (out: number[][], size = len) => {
    const shape = [...x.shape];
    shape[d] = size;
    const data = new Float64Array(outer * size * inner);
    let r = 0;
    for (let o = 0; o < outer; o++)
      for (let i = 0; i < inner; i++, r++) for (let k = 0; k < size; k++) data[(o * size + k) * inner + i] = out[r][k];
    return { shape, data };
  };
  return { rows: rs, put };
}

export function permute(x: Arr, perm: number[]): Arr {
  const shape = perm.map((p) => x.shape[p]);
  const st = strides(x.shape),
    os = strides(shape);
  return arr(shape, (i) => {
    let k = 0;
    for (let d = 0; d < shape.length; d++) k += (Math.floor(i / os[d]) % shape[d]) * st[perm[d]];
    return x.data[k];
  });
}

export function matmul2(a: Arr, b: Arr): Arr {
  const [m, k] = a.shape,
    n = b.shape[1];
  return arr([m, n], (i) => {
    const r = Math.floor(i / n),
      c = i % n;
    let s = 0;
    for (let p = 0; p < k; p++) s += a.data[r * k + p] * b.data[p * n + c];
    return s;
  });
}

export const sum = (vs: number[]): number => vs.reduce((a, b) => a + b, 0);

export function erf(x: number): number {
  // Abramowitz–Stegun 7.1.26 is too coarse for f64; use the series / continued fraction.
  const t = Math.abs(x);
  if (t < 2.5) {
    let term = t,
      s = t;
    for (let n = 1; n < 200; n++) {
      term *= (-t * t) / n;
      const add = term / (2 * n + 1);
      s += add;
      if (Math.abs(add) < 1e-17 * Math.abs(s)) break;
    }
    return (Math.sign(x) * 2 * s) / Math.sqrt(Math.PI);
  }
  // erfc by continued fraction for large |x|.
  let f = 0;
  for (let n = 60; n >= 1; n--) f = n / 2 / (t + f);
  const erfc = Math.exp(-t * t) / Math.sqrt(Math.PI) / (t + f);
  return Math.sign(x) * (1 - erfc);
}

export const sigmoid = (v: number): number => 1 / (1 + Math.exp(-v));
export const gelu = (v: number): number => 0.5 * v * (1 + erf(v / Math.SQRT2));
export const geluTanh = (v: number): number => 0.5 * v * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (v + 0.044715 * v ** 3)));
export const silu = (v: number): number => v * sigmoid(v);
/** Round half to even, as torch.round. */
export function roundEven(v: number): number {
  const r = Math.round(v);
  return Math.abs(v % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

/**
 * Visits the elements of a scatter-style index (gather's, scatter's, scatterAdd's): for index
 * element i, `k` is its target offset in x (its coordinates with `dim` replaced by the index value)
 * and `s` the offset of the same coordinates in src (which may be larger than index).
 */
export function forEachScatter(x: Arr, dim: number, index: Arr, src: Arr, f: (k: number, s: number) => void): void {
  const xs = strides(x.shape),
    is = strides(index.shape),
    ss = strides(src.shape);
  for (let i = 0; i < index.data.length; i++) {
    let k = 0,
      s = 0;
    for (let d = 0; d < index.shape.length; d++) {
      const c = Math.floor(i / is[d]) % index.shape[d];
      k += (d === dim ? index.data[i] : c) * xs[d];
      s += c * ss[d];
    }
    f(k, s);
  }
}

/** scatterReduce's reduction ('sum', 'prod', 'mean', 'amax', else amin) of the values meeting at one target; intMean floors the mean, as for integer dtypes. */
export function reduceScattered(reduce: string, g: number[], intMean = false): number {
  switch (reduce) {
    case 'sum':
      return g.reduce((a, b) => a + b, 0);
    case 'prod':
      return g.reduce((a, b) => a * b, 1);
    case 'mean': {
      const m = g.reduce((a, b) => a + b, 0) / g.length;
      return intMean ? Math.floor(m) : m;
    }
    case 'amax':
      return Math.max(...g);
    default:
      return Math.min(...g);
  }
}
