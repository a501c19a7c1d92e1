/** Creation ops: tensors from nested arrays or typed arrays, constants, ranges and random draws. */
import { native } from '../native';
import { Tensor } from '../tensor';
import { type DType, isDType } from '../dtype';
import { normalizeDevice } from '../device';
import { nextDraw } from '../random';
import { rangeError, typeError, wrap } from './util';

export interface TensorOptions {
  dtype?: DType;
  device?: string;
  requiresGrad?: boolean;
}

type Nested = number | boolean | Nested[];
export type TensorInput = Nested | Float32Array | Float64Array | Int32Array | BigInt64Array | Uint8Array;

function opts(op: string, o: TensorOptions | undefined, fallback: DType): { dtype: DType; device: string; requiresGrad: boolean } {
  if (o !== undefined && (o === null || typeof o !== 'object')) throw typeError(op, 'options must be an object');
  const dtype = o?.dtype ?? fallback;
  if (!isDType(dtype)) throw typeError(op, `unknown dtype '${String(dtype)}'`, 'ERR_DTYPE');
  return { dtype, device: normalizeDevice(o?.device, op), requiresGrad: o?.requiresGrad ?? false };
}

function finish(t: Tensor, requiresGrad: boolean): Tensor {
  if (requiresGrad) t.requiresGrad_(true);
  return t;
}

function checkShape(op: string, shape: unknown): number[] {
  if (!Array.isArray(shape)) throw typeError(op, `shape must be an array of integers, got ${typeof shape}`);
  for (const s of shape) {
    if (typeof s !== 'number' || !Number.isInteger(s)) throw typeError(op, `shape must hold integers, got ${JSON.stringify(shape)}`);
    if (s < 0) throw rangeError(op, `shape must be non-negative, got ${JSON.stringify(shape)}`);
  }
  return shape as number[];
}

const TYPED: [new (...a: never[]) => unknown, DType][] = [
  [Float32Array, 'f32'], [Float64Array, 'f64'], [Int32Array, 'i32'], [BigInt64Array, 'i64'], [Uint8Array, 'u8'],
];

function encode(values: ArrayLike<number>, dtype: DType): ArrayBufferView {
  switch (dtype) {
    case 'f32': return Float32Array.from(values);
    case 'f64': return Float64Array.from(values);
    case 'i32': return Int32Array.from(values);
    case 'i64': return BigInt64Array.from(Array.from(values, (v) => BigInt(Math.trunc(v))));
    case 'u8': return Uint8Array.from(values);
    case 'bool': return Uint8Array.from(values, (v) => (v ? 1 : 0));
    case 'bf16': case 'f16': return Float32Array.from(values);  // cast below
  }
}

/**
 * A tensor from nested arrays or a typed array. Integers give i64 and booleans bool (as PyTorch),
 * other numbers f32; `options.dtype` overrides. A typed array keeps its own dtype unless overridden.
 */
export function tensor(data: TensorInput, options?: TensorOptions & { shape?: number[] }): Tensor {
  for (const [ctor, dt] of TYPED) {
    if (data instanceof ctor) {
      const arr = data as ArrayBufferView & { length: number };
      const shape = options?.shape ? checkShape('tensor', options.shape) : [arr.length];
      const o = opts('tensor', options, dt);
      const t = wrap(native.fromBuffer(arr, shape, dt, o.device));
      return finish(o.dtype === dt ? t : t.to(o.dtype), o.requiresGrad);
    }
  }
  const shape: number[] = [];
  let probe: unknown = data;
  while (Array.isArray(probe)) {
    shape.push(probe.length);
    probe = probe[0];
  }
  const flat: number[] = [];
  let sawFloat = false, sawBool = false, sawNumber = false;
  const walk = (v: unknown, depth: number): void => {
    if (depth === shape.length) {
      if (typeof v === 'number') {
        sawNumber = true;
        if (!Number.isInteger(v)) sawFloat = true;
        flat.push(v);
      } else if (typeof v === 'boolean') {
        sawBool = true;
        flat.push(v ? 1 : 0);
      } else {
        throw typeError('tensor', `expected numbers or booleans, found ${Array.isArray(v) ? 'a ragged nested array' : typeof v}`);
      }
      return;
    }
    if (!Array.isArray(v) || v.length !== shape[depth])
      throw rangeError('tensor', `nested arrays are ragged: expected length ${shape[depth]} at depth ${depth}`);
    for (const e of v) walk(e, depth + 1);
  };
  walk(data, 0);
  const inferred: DType = sawBool && !sawNumber ? 'bool' : sawFloat || flat.length === 0 ? 'f32' : 'i64';
  const o = opts('tensor', options, inferred);
  const enc = o.dtype === 'bf16' || o.dtype === 'f16' ? 'f32' : o.dtype;
  const t = wrap(native.fromBuffer(encode(flat, o.dtype), shape, enc, o.device));
  return finish(enc === o.dtype ? t : t.to(o.dtype), o.requiresGrad);
}

export function full(shape: number[], value: number, options?: TensorOptions): Tensor {
  const o = opts('full', options, typeof value === 'boolean' ? 'bool' : 'f32');
  if (typeof value !== 'number' && typeof value !== 'boolean') throw typeError('full', `value must be a number, got ${typeof value}`);
  return finish(wrap(native.full(checkShape('full', shape), o.dtype, o.device, Number(value))), o.requiresGrad);
}
export const zeros = (shape: number[], options?: TensorOptions): Tensor => full(shape, 0, options);
export const ones = (shape: number[], options?: TensorOptions): Tensor => full(shape, 1, options);
export const zerosLike = (t: Tensor, options?: TensorOptions): Tensor => full([...t.shape], 0, { dtype: t.dtype, device: t.device, ...options });
export const onesLike = (t: Tensor, options?: TensorOptions): Tensor => full([...t.shape], 1, { dtype: t.dtype, device: t.device, ...options });

/** Values in [start, end) spaced by step; `arange(n)` counts 0..n-1 (i64 for integer args). */
export function arange(start: number, end?: number, step = 1, options?: TensorOptions): Tensor {
  if (end === undefined) [start, end] = [0, start];
  const ints = [start, end, step].every(Number.isInteger);
  const o = opts('arange', options, ints ? 'i64' : 'f32');
  return finish(wrap(native.arange(start, end, step, o.dtype, o.device)), o.requiresGrad);
}

export function linspace(start: number, end: number, steps: number, options?: TensorOptions): Tensor {
  const o = opts('linspace', options, 'f32');
  return finish(wrap(native.linspace(start, end, steps, o.dtype, o.device)), o.requiresGrad);
}

export function eye(n: number, m = n, options?: TensorOptions): Tensor {
  const o = opts('eye', options, 'f32');
  const rows = arange(0, n, 1, { device: o.device }).unsqueeze(1);
  const cols = arange(0, m, 1, { device: o.device });
  return finish(rows.eq(cols).to(o.dtype), o.requiresGrad);
}

function draw(kind: 'uniform' | 'normal' | 'randint' | 'bernoulli', op: string, shape: number[], o: { dtype: DType; device: string }, a: number, b: number): Tensor {
  const s = checkShape(op, shape);
  const { seed, offset } = nextDraw(s.reduce((x, y) => x * y, 1));
  return wrap(native.random(kind, s, o.dtype, o.device, seed, offset, a, b));
}

/** Uniform samples in [0, 1) from the global Philox generator (see fl.manualSeed). */
export function rand(shape: number[], options?: TensorOptions & { low?: number; high?: number }): Tensor {
  const o = opts('rand', options, 'f32');
  return finish(draw('uniform', 'rand', shape, o, options?.low ?? 0, options?.high ?? 1), o.requiresGrad);
}

/** Standard normal samples (mean and std adjustable). */
export function randn(shape: number[], options?: TensorOptions & { mean?: number; std?: number }): Tensor {
  const o = opts('randn', options, 'f32');
  return finish(draw('normal', 'randn', shape, o, options?.mean ?? 0, options?.std ?? 1), o.requiresGrad);
}

/** Integers uniformly in [low, high). */
export function randint(low: number, high: number, shape: number[], options?: TensorOptions): Tensor {
  const o = opts('randint', options, 'i64');
  return draw('randint', 'randint', shape, o, low, high);
}

/** 1 with probability p, else 0. */
export function bernoulli(shape: number[], p: number, options?: TensorOptions): Tensor {
  const o = opts('bernoulli', options, 'f32');
  return draw('bernoulli', 'bernoulli', shape, o, p, 0);
}
