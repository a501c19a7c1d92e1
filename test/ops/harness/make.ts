/** Inputs for a conformance case: seeded values, made in the case's dtype on a device, with their f64 copy. */
import * as fl from '../../../lib/index';
import type { DType, Tensor } from '../../../lib/index';
import { mulberry32 } from '../../../lib/data/distributed_sampler';
import type { Arr, InputSpec } from './types';

export function numel(shape: readonly number[]): number {
  return shape.reduce((a, b) => a * b, 1);
}

/** The dtype an input spec asks for when the case runs in `dtype`. */
export function inputDType(spec: InputSpec, dtype: DType): DType {
  const kind = spec.kind ?? 'float';
  if (kind === 'float') return dtype;
  if (kind === 'int') return 'i64';
  return kind;
}

export function isFloatDType(d: DType): boolean {
  return d === 'f32' || d === 'f64' || d === 'bf16' || d === 'f16';
}

/** Row-major f64 values of any tensor (bool and integers as numbers), read on the CPU. */
export function toArr(t: Tensor): Arr {
  const c = t.to('cpu');
  const f = c.dtype === 'f64' ? c : c.to('f64');
  return { shape: [...t.shape], data: Float64Array.from(f.dataSync() as Float64Array) };
}

/** Seeded values for one input: fixed values, random in [low, high), integers in [0, high), or booleans. */
export function values(spec: InputSpec, dtype: DType, rand: () => number): number[] {
  if (spec.values) return spec.values;
  const n = numel(spec.shape);
  const d = inputDType(spec, dtype);
  if (d === 'bool') return Array.from({ length: n }, () => (rand() < 0.5 ? 1 : 0));
  if (!isFloatDType(d)) {
    const lo = spec.low ?? 0,
      hi = spec.high ?? 10;
    return Array.from({ length: n }, () => lo + Math.floor(rand() * (hi - lo)));
  }
  const lo = spec.low ?? -2,
    hi = spec.high ?? 2;
  return Array.from({ length: n }, () => lo + rand() * (hi - lo));
}

export interface Made {
  tensors: Tensor[];
  /** The inputs' values as the op sees them (after rounding to the dtype), in f64. */
  arrs: Arr[];
}

/** The case's inputs in `dtype` on the CPU, from `seed`. */
export function makeInputs(specs: InputSpec[], dtype: DType, seed: number): Made {
  const rand = mulberry32(seed);
  const tensors = specs.map((s) => {
    const d = inputDType(s, dtype);
    const v = values(s, dtype, rand);
    const base = fl.tensor(Float64Array.from(v), { dtype: 'f64', shape: [...s.shape] });
    return d === 'f64' ? base : base.to(d);
  });
  return { tensors, arrs: tensors.map(toArr) };
}

/**
 * The same values in a storage the tensor does not start at and does not cover: a view of rows
 * 1..n of a tensor with one extra leading row (NaN where the dtype has it), so a kernel that
 * ignores the view's offset or reads past it fails the comparison. 0-d inputs stay as they are.
 */
export function offsetView(t: Tensor): Tensor {
  if (t.ndim === 0) return t;
  const pad = isFloatDType(t.dtype) ? NaN : 0;
  const extra = fl.full([1, ...t.shape.slice(1)], pad, { dtype: t.dtype, device: t.device });
  const after = fl.full([1, ...t.shape.slice(1)], pad, { dtype: t.dtype, device: t.device });
  return fl.noGrad(() => fl.cat([extra, t, after], 0).narrow(0, 1, t.shape[0]));
}

/**
 * The layouts flockml makes that a kernel may mis-handle: the values transposed into a new buffer
 * and transposed back (last two dims, each a strided copy), then seen through an offset view.
 */
export function nonContiguous(t: Tensor): Tensor {
  const back = t.ndim < 2 ? t : fl.noGrad(() => t.transpose(-1, -2).clone().transpose(-1, -2));
  return offsetView(back);
}
