/**
 * F.interpolate with PyTorch 1.13's index math, one spatial dim at a time (every mode here is
 * separable): 'nearest' and 'nearest-exact' are an index select, the linear modes two index selects
 * mixed by per-position weights, 'area' adaptive average pooling. Indices and weights are computed
 * here in the precision PyTorch's kernels use (f32 for nearest, the input's opmath type for linear),
 * so the same source elements are picked; gradients come from the index selects and products.
 */
import type { Tensor } from '../../tensor';
import { tensor } from '../../ops/creation';
import { shapeStr } from '../../ops/util';
import { argError, checkOptions, flockError } from '../../errors';
import { checkBool, checkChoice, checkNumber, valueText } from '../../validate';
import { isFloating } from '../../dtype';
import { checkFloat, tensorArg } from './args';
import { adaptiveAvgPool1dWith } from './pool1d';
import { adaptiveAvgPool2dWith } from './pool';

export type InterpolateMode = 'nearest' | 'nearest-exact' | 'linear' | 'bilinear' | 'trilinear' | 'area';
const MODES: readonly InterpolateMode[] = ['nearest', 'nearest-exact', 'linear', 'bilinear', 'trilinear', 'area'];
const LINEAR_DIMS: Partial<Record<InterpolateMode, number>> = { linear: 3, bilinear: 4, trilinear: 5 };

export interface InterpolateOptions {
  /** The output's spatial size: one for every spatial dim, or a number for all of them. */
  size?: number | number[] | null;
  /** Multiplies each spatial size (output = floor(size · factor)); give this or `size`. */
  scaleFactor?: number | number[] | null;
  /** Default 'nearest'. 'linear' takes a 3-D input, 'bilinear' 4-D, 'trilinear' 5-D. */
  mode?: InterpolateMode;
  /** Linear modes only: map the corner pixels' centres onto each other (default false). */
  alignCorners?: boolean | null;
  /** With scaleFactor: index with in/out of the floored output size rather than 1/scaleFactor. */
  recomputeScaleFactor?: boolean | null;
  /** Not supported: true is ERR_ARG. */
  antialias?: boolean;
}

const KEYS = ['size', 'scaleFactor', 'mode', 'alignCorners', 'recomputeScaleFactor', 'antialias'] as const;

/** @internal The checked options, input-independent part (the layer checks them once). */
export function interpolateOptions(op: string, options: unknown) {
  const o = checkOptions(op, options as InterpolateOptions | undefined, KEYS);
  const mode = checkChoice(op, 'mode', o.mode ?? 'nearest', MODES);
  const linear = mode in LINEAR_DIMS;
  const alignCorners = o.alignCorners === undefined || o.alignCorners === null ? null : checkBool(op, 'alignCorners', o.alignCorners);
  if (alignCorners !== null && !linear)
    throw argError(op, `alignCorners can only be set with the interpolating modes 'linear', 'bilinear', 'trilinear'; mode is '${mode}'`);
  if (o.antialias !== undefined && checkBool(op, 'antialias', o.antialias))
    throw argError(op, 'antialias is not supported (flockml has no anti-aliasing resize kernel)');
  const recompute =
    o.recomputeScaleFactor === undefined || o.recomputeScaleFactor === null
      ? false
      : checkBool(op, 'recomputeScaleFactor', o.recomputeScaleFactor);
  const hasSize = o.size !== undefined && o.size !== null,
    hasScale = o.scaleFactor !== undefined && o.scaleFactor !== null;
  if (hasSize === hasScale) throw argError(op, `give exactly one of size and scaleFactor, got ${hasSize ? 'both' : 'neither'}`);
  if (recompute && hasSize) throw argError(op, 'recomputeScaleFactor is not meaningful with an explicit size');
  const list = (v: unknown, check: (x: unknown) => number) => (Array.isArray(v) ? v.map(check) : check(v));
  const size = hasSize ? list(o.size, (x) => checkNumber(op, 'size', x, { integer: true, min: 1 })) : null;
  const scaleFactor = hasScale ? list(o.scaleFactor, (x) => checkNumber(op, 'scaleFactor', x, { above: 0 })) : null;
  return { mode, alignCorners: alignCorners ?? false, recompute, size, scaleFactor };
}

type Checked = ReturnType<typeof interpolateOptions>;

/**
 * Resizes the spatial dims of `x` ([N, C, L], [N, C, H, W] or [N, C, D, H, W]) to `size` or by
 * `scaleFactor`, as torch.nn.functional.interpolate: 'nearest' picks floor(dst · in/out) (or
 * dst / scaleFactor when one is given and not recomputed), 'nearest-exact' the pixel whose centre is
 * nearest, 'linear'/'bilinear'/'trilinear' mix the two nearest pixels per dim (half-pixel centres,
 * or corners matched with alignCorners), 'area' averages bins (3-D and 4-D inputs). Differentiable.
 */
export function interpolate(x: Tensor, options: InterpolateOptions = {}): Tensor {
  return interpolateWith('interpolate', x, interpolateOptions('interpolate', options));
}

/** @internal interpolate with checked options, errors named `op`. */
export function interpolateWith(op: string, x: unknown, o: Checked): Tensor {
  const t = tensorArg(op, 'input', x);
  const need = LINEAR_DIMS[o.mode];
  if (need !== undefined && t.ndim !== need)
    throw flockError('ERR_SHAPE', op, `mode '${o.mode}' needs a ${need}-D input, got ${shapeStr(t.shape)}`);
  if (t.ndim < 3 || t.ndim > (o.mode === 'area' ? 4 : 5))
    throw flockError(
      'ERR_SHAPE',
      op,
      `expected a 3-D to ${o.mode === 'area' ? 4 : 5}-D input [N, C, spatial…] for mode '${o.mode}', got ${shapeStr(t.shape)}`,
    );
  // As PyTorch 1.13: the nearest modes also take u8 (images); no mode takes other integers or bool.
  if (o.mode !== 'nearest' && o.mode !== 'nearest-exact') checkFloat(op, t);
  else if (t.dtype !== 'u8') checkFloat(op, t);
  const k = t.ndim - 2;
  const perDim = (v: number | number[], name: string) => {
    if (!Array.isArray(v)) return Array<number>(k).fill(v);
    if (v.length !== k)
      throw flockError('ERR_SHAPE', op, `${name} ${valueText(v)} must give one value per spatial dim of input ${shapeStr(t.shape)} (${k})`);
    return v;
  };
  const inSizes = t.shape.slice(2);
  const factors = o.scaleFactor === null ? null : perDim(o.scaleFactor, 'scaleFactor');
  const outSizes = o.size !== null ? perDim(o.size, 'size') : inSizes.map((n, i) => Math.floor(n * (factors as number[])[i]));
  if (outSizes.some((n) => n < 1) || inSizes.some((n) => n < 1))
    throw flockError(
      'ERR_SHAPE',
      op,
      `input and output sizes must be > 0, got input ${shapeStr(t.shape)} and output ${shapeStr(outSizes)}`,
    );
  // As PyTorch: a recomputed factor (and 'area') indexes by in/out; a given one by 1/scaleFactor.
  const scales = factors && !o.recompute && o.mode !== 'area' ? factors : null;
  if (o.mode === 'area')
    return k === 1 ? adaptiveAvgPool1dWith(op, t, outSizes[0]) : adaptiveAvgPool2dWith(op, t, [outSizes[0], outSizes[1]]);
  let y = t;
  for (let i = 0; i < k; i++) {
    const d = 2 + i,
      n = inSizes[i],
      m = outSizes[i],
      s = scales ? scales[i] : null;
    if (o.mode === 'nearest' || o.mode === 'nearest-exact') {
      if (m === n && o.mode === 'nearest') continue;
      const rows = nearestRows(n, m, s, o.mode === 'nearest-exact', t.ndim === 3 && t.dtype === 'f64');
      y = y.indexSelect(d, tensor(rows, { device: t.device }));
    } else {
      y = linearAlong(y, d, n, m, s, o.alignCorners);
    }
  }
  return y;
}

/**
 * PyTorch 1.13's nearest source index of every output position: its CPU kernels compute in f32,
 * except for a 3-D f64 input, whose scale and product are f64 (then rounded to f32 and floored) —
 * the two differ, for example, at 37 of 6 → 74 (2 in f32, 3 in f64); test/nn/interpolate.test.ts pins both.
 */
function nearestRows(n: number, m: number, scaleFactor: number | null, exact: boolean, wide: boolean): Int32Array {
  const f = Math.fround;
  const r = wide ? (v: number) => v : f;
  const scale = r(scaleFactor !== null ? 1 / scaleFactor : n / m);
  return Int32Array.from({ length: m }, (_, j) => {
    if (exact) return Math.min(Math.floor(f((j + 0.5) * scale)), n - 1);
    if (m === 2 * n) return j >> 1;
    return Math.min(Math.floor(f(j * scale)), n - 1);
  });
}

/**
 * Linear resampling of dim `d` from n to m: x[i0]·w0 + x[i1]·w1 with PyTorch's source index
 * (half-pixel, clamped at 0; or corner-aligned), in f64 for f64 inputs and f32 otherwise.
 */
function linearAlong(x: Tensor, d: number, n: number, m: number, scaleFactor: number | null, alignCorners: boolean): Tensor {
  if (m === n) return x; // PyTorch copies when the size is unchanged, whatever the factor
  const r = x.dtype === 'f64' ? (v: number) => v : Math.fround;
  const scale = alignCorners ? (m > 1 ? r((n - 1) / (m - 1)) : 0) : r(scaleFactor !== null ? 1 / scaleFactor : n / m);
  const i0 = new Int32Array(m),
    i1 = new Int32Array(m),
    w0 = new Float64Array(m),
    w1 = new Float64Array(m);
  for (let j = 0; j < m; j++) {
    const src = alignCorners ? r(scale * j) : Math.max(r(scale * (j + 0.5) - 0.5), 0);
    const lo = Math.min(Math.floor(src), n - 1);
    i0[j] = lo;
    i1[j] = lo < n - 1 ? lo + 1 : lo;
    w1[j] = Math.min(Math.max(r(src - lo), 0), 1);
    w0[j] = r(1 - w1[j]);
  }
  const shape = x.shape.map((_, i) => (i === d ? m : 1));
  const opts = { device: x.device };
  const weight = (w: Float64Array) => {
    const t = tensor(w, { ...opts, shape });
    return isFloating(x.dtype) && x.dtype !== 'f64' ? t.to(x.dtype) : t;
  };
  const a = x.indexSelect(d, tensor(i0, opts)).mul(weight(w0));
  return a.add(x.indexSelect(d, tensor(i1, opts)).mul(weight(w1)));
}
