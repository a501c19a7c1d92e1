/** Creation ops: tensors from nested arrays or typed arrays, constants, ranges and random draws. */
import { native } from '../native';
import type { Tensor } from '../tensor';
import { type CanonicalDType, type DType, checkValueFits, isFloating, toDType } from '../dtype';
import { checkOptions, describe } from '../errors';
import { normalizeDevice } from '../device';
import { nextDraw } from '../random';
import { checkInt, checkNumber, valueText } from '../validate';
import { checkTensor, rangeError, typeError, wrap } from './util';

export interface TensorOptions {
  /** A short name ('f32', 'i64', ...) or one of PyTorch's ('float32', 'long', ...). */
  dtype?: DType;
  device?: string;
  /** Marks the new tensor as a leaf that requires grad (floating dtypes only). */
  requiresGrad?: boolean;
}

type Nested = number | boolean | Nested[];
export type TensorInput = Nested | Float32Array | Float64Array | Int32Array | BigInt64Array | Uint8Array;

const OPTION_KEYS = ['dtype', 'device', 'requiresGrad'] as const;

interface Resolved {
  dtype: CanonicalDType;
  device: string;
  requiresGrad: boolean;
}

function opts(op: string, o: TensorOptions | undefined, fallback: CanonicalDType, extra: readonly string[] = []): Resolved {
  checkOptions(op, o, [...OPTION_KEYS, ...extra]);
  const dtype = o?.dtype === undefined ? fallback : toDType(op, o.dtype);
  const requiresGrad = o?.requiresGrad ?? false;
  if (typeof requiresGrad !== 'boolean') throw typeError(op, `requiresGrad must be a boolean, got ${describe(requiresGrad)}`);
  if (requiresGrad && !isFloating(dtype))
    throw typeError(op, `only floating tensors (f32, f64, bf16, f16) can require gradients, got dtype ${dtype}`, 'ERR_DTYPE');
  return { dtype, device: normalizeDevice(o?.device, op), requiresGrad };
}

function finish(t: Tensor, requiresGrad: boolean): Tensor {
  if (requiresGrad) t.requiresGrad_(true);
  return t;
}

function checkShape(op: string, shape: unknown): number[] {
  if (!Array.isArray(shape)) throw typeError(op, `shape must be an array of integers, got ${describe(shape)}`);
  for (const s of shape) {
    if (typeof s !== 'number' || !Number.isInteger(s)) throw typeError(op, `shape must hold integers, got ${valueText(shape)}`);
    if (s < 0) throw rangeError(op, `shape must be non-negative, got ${valueText(shape)}`);
  }
  return shape as number[];
}

/** The typed arrays that map to a dtype, and the dtype each keeps. */
const TYPED: [new (...a: never[]) => ArrayLike<number | bigint>, CanonicalDType][] = [
  [Float32Array, 'f32'],
  [Float64Array, 'f64'],
  [Int32Array, 'i32'],
  [BigInt64Array, 'i64'],
  [Uint8Array, 'u8'],
];

/** Values of JS numbers as the bytes of `dtype` (bf16/f16 go through f32 and a cast). */
function encode(values: ArrayLike<number>, dtype: CanonicalDType): ArrayBufferView {
  switch (dtype) {
    case 'f32':
      return Float32Array.from(values);
    case 'f64':
      return Float64Array.from(values);
    case 'i32':
      return Int32Array.from(values);
    case 'i64':
      return BigInt64Array.from(Array.from(values, (v) => BigInt(Math.trunc(v))));
    case 'u8':
      return Uint8Array.from(values);
    case 'bool':
      return Uint8Array.from(values, (v) => (v !== 0 ? 1 : 0)); // NaN is true, as in PyTorch
    case 'bf16':
    case 'f16':
      return Float32Array.from(values);
  }
}

/** A tensor of `dtype` from JS numbers already checked to fit it. */
function fromNumbers(values: ArrayLike<number>, shape: number[], dtype: CanonicalDType, device: string): Tensor {
  const half = dtype === 'bf16' || dtype === 'f16';
  const t = wrap(native.fromBuffer(encode(values, dtype), shape, half ? 'f32' : dtype, device));
  return half ? t.to(dtype) : t;
}

function checkValues(op: string, values: ArrayLike<number | bigint>, dtype: CanonicalDType): void {
  if (!isInteger(dtype)) return;
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (typeof v === 'bigint') {
      if (dtype !== 'i64') checkValueFits(op, Number(v), dtype);
    } else {
      checkValueFits(op, v, dtype);
    }
  }
}

function isInteger(d: CanonicalDType): boolean {
  return d === 'i32' || d === 'i64' || d === 'u8';
}

function typedTensor(
  arr: ArrayLike<number | bigint> & ArrayBufferView,
  own: CanonicalDType,
  options: (TensorOptions & { shape?: number[] }) | undefined,
): Tensor {
  const o = opts('tensor', options, own, ['shape']);
  const shape = options?.shape !== undefined ? checkShape('tensor', options.shape) : [arr.length];
  if (o.dtype === own) return finish(wrap(native.fromBuffer(arr, shape, own, o.device)), o.requiresGrad);
  if (isInteger(o.dtype)) {
    // A native cast would wrap values the target cannot hold: check and convert them here.
    checkValues('tensor', arr, o.dtype);
    const values = own === 'i64' ? Array.from(arr, Number) : (arr as ArrayLike<number>);
    return finish(fromNumbers(values, shape, o.dtype, o.device), o.requiresGrad);
  }
  return finish(wrap(native.fromBuffer(arr, shape, own, o.device)).to(o.dtype), o.requiresGrad);
}

/**
 * A tensor from nested arrays or a typed array. The dtype follows the input's type, never its
 * values: JS numbers give f32 (1.0 and 1 are the same number in JS), booleans bool; a typed array
 * keeps its own (Int32Array i32, BigInt64Array i64, Uint8Array u8, Float64Array f64). `options.dtype`
 * overrides; a value an integer dtype cannot hold (NaN, Infinity, out of range) throws ERR_RANGE.
 */
export function tensor(data: TensorInput, options?: TensorOptions & { shape?: number[] }): Tensor {
  for (const [ctor, dt] of TYPED) {
    if (data instanceof ctor) return typedTensor(data as ArrayLike<number | bigint> & ArrayBufferView, dt, options);
  }
  if (ArrayBuffer.isView(data))
    throw typeError(
      'tensor',
      `${data.constructor.name} has no dtype; use Float32Array, Float64Array, Int32Array, BigInt64Array or Uint8Array`,
      'ERR_DTYPE',
    );
  const shape: number[] = [];
  let probe: unknown = data;
  while (Array.isArray(probe)) {
    shape.push(probe.length);
    probe = probe[0];
  }
  const flat: number[] = [];
  let sawBool = false,
    sawNumber = false;
  const walk = (v: unknown, depth: number): void => {
    if (depth === shape.length) {
      if (typeof v === 'number') {
        sawNumber = true;
        flat.push(v);
      } else if (typeof v === 'boolean') {
        sawBool = true;
        flat.push(v ? 1 : 0);
      } else {
        throw typeError('tensor', `expected numbers or booleans, found ${Array.isArray(v) ? 'a ragged nested array' : describe(v)}`);
      }
      return;
    }
    if (!Array.isArray(v) || v.length !== shape[depth])
      throw rangeError('tensor', `nested arrays are ragged: expected length ${shape[depth]} at depth ${depth}`);
    for (const e of v) walk(e, depth + 1);
  };
  walk(data, 0);
  const o = opts('tensor', options, sawBool && !sawNumber ? 'bool' : 'f32', ['shape']);
  if (options?.shape !== undefined) throw typeError('tensor', 'options.shape applies to typed arrays; nested arrays carry their shape');
  checkValues('tensor', flat, o.dtype);
  return finish(fromNumbers(flat, shape, o.dtype, o.device), o.requiresGrad);
}

function fill(op: string, shape: number[], value: number | boolean, options: TensorOptions | undefined): Tensor {
  if (typeof value !== 'number' && typeof value !== 'boolean') throw typeError(op, `value must be a number, got ${describe(value)}`);
  const o = opts(op, options, typeof value === 'boolean' ? 'bool' : 'f32');
  checkValueFits(op, Number(value), o.dtype);
  return finish(wrap(native.full(checkShape(op, shape), o.dtype, o.device, Number(value))), o.requiresGrad);
}

/** A tensor of `shape` filled with `value`: f32 for a number, bool for a boolean, unless `dtype` says. */
export function full(shape: number[], value: number | boolean, options?: TensorOptions): Tensor {
  return fill('full', shape, value, options);
}
export function zeros(shape: number[], options?: TensorOptions): Tensor {
  return fill('zeros', shape, 0, options);
}
export function ones(shape: number[], options?: TensorOptions): Tensor {
  return fill('ones', shape, 1, options);
}
function likeOptions(op: string, t: Tensor, options: TensorOptions | undefined): TensorOptions {
  checkTensor(op, 'input', t);
  checkOptions(op, options, OPTION_KEYS);
  return { ...options, dtype: options?.dtype ?? t.dtype, device: options?.device ?? t.device };
}
export function zerosLike(t: Tensor, options?: TensorOptions): Tensor {
  const o = likeOptions('zerosLike', t, options);
  return fill('zerosLike', [...t.shape], 0, o);
}
export function onesLike(t: Tensor, options?: TensorOptions): Tensor {
  const o = likeOptions('onesLike', t, options);
  return fill('onesLike', [...t.shape], 1, o);
}
export function fullLike(t: Tensor, value: number | boolean, options?: TensorOptions): Tensor {
  const o = likeOptions('fullLike', t, options);
  return fill('fullLike', [...t.shape], value, o);
}

/**
 * `f(a, b, { dtype })` as PyTorch's keyword arguments: the first plain object among the trailing
 * positional arguments is the options, and nothing may follow it. Returns the positional part
 * (padded with undefined to `count`) and the options.
 */
function trailingOptions(op: string, args: readonly unknown[], count: number): [unknown[], TensorOptions | undefined] {
  const plain = (a: unknown) => a !== null && typeof a === 'object' && [Object.prototype, null].includes(Object.getPrototypeOf(a));
  const at = args.findIndex((a, i) => i < count && plain(a));
  if (at < 0 || at >= count) return [args.slice(0, count), args[count] as TensorOptions | undefined];
  const after = args.findIndex((a, i) => i > at && a !== undefined);
  if (after >= 0) throw typeError(op, `the options object must come last, got ${describe(args[after])} after it`);
  return [[...args.slice(0, at), ...Array(count - at).fill(undefined)], args[at] as TensorOptions];
}

/**
 * Values in [start, end) spaced by step; `arange(n)` counts 0..n-1. As in PyTorch, the dtype is
 * i64 when start, end and step are all integers and f32 otherwise, unless `dtype` says. The
 * options come last wherever the numbers end: `arange(0, 6, { dtype: 'f64' })`, as PyTorch's
 * keyword arguments.
 */
export function arange(end: number, options?: TensorOptions): Tensor;
export function arange(start: number, end: number, options?: TensorOptions): Tensor;
export function arange(start: number, end?: number, step?: number, options?: TensorOptions): Tensor;
export function arange(...args: unknown[]): Tensor {
  const [nums, options] = trailingOptions('arange', args, 3);
  let [start, end, step] = nums as [number, number | undefined, number | undefined];
  step ??= 1;
  if (end === undefined) [start, end] = [0, start];
  for (const [name, v] of [
    ['start', start],
    ['end', end],
    ['step', step],
  ] as const)
    if (typeof v !== 'number' || !Number.isFinite(v)) throw typeError('arange', `${name} must be a finite number, got ${describe(v)}`);
  if (step === 0) throw typeError('arange', 'step must be non-zero');
  const o = opts('arange', options, [start, end, step].every(Number.isInteger) ? 'i64' : 'f32');
  const count = Math.max(0, Math.ceil((end - start) / step));
  if (count > 0) {
    checkValueFits('arange', start, o.dtype);
    checkValueFits('arange', start + (count - 1) * step, o.dtype);
  }
  return finish(wrap(native.arange(start, end, step, o.dtype, o.device)), o.requiresGrad);
}

/** `steps` values evenly spaced from start to end inclusive (f32 unless `dtype` says). */
export function linspace(start: number, end: number, steps: number, options?: TensorOptions): Tensor {
  const o = opts('linspace', options, 'f32');
  checkNumber('linspace', 'start', start, { infinite: true });
  checkNumber('linspace', 'end', end, { infinite: true });
  checkInt('linspace', 'steps', steps);
  if (steps > 0) {
    checkValueFits('linspace', start, o.dtype);
    checkValueFits('linspace', end, o.dtype);
  }
  return finish(wrap(native.linspace(start, end, steps, o.dtype, o.device)), o.requiresGrad);
}

/** The n×m identity matrix (m = n by default), f32 unless `dtype` says; `eye(3, { dtype })` works too. */
export function eye(n: number, options?: TensorOptions): Tensor;
export function eye(n: number, m?: number, options?: TensorOptions): Tensor;
export function eye(...args: unknown[]): Tensor {
  const [nums, options] = trailingOptions('eye', args, 2);
  const n = nums[0] as number;
  const m = (nums[1] ?? n) as number;
  const o = opts('eye', options, 'f32');
  for (const [name, v] of [
    ['n', n],
    ['m', m],
  ] as const)
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 0)
      throw rangeError('eye', `${name} must be a non-negative integer, got ${describe(v)}`, 'ERR_RANGE');
  const rows = arange(0, n, 1, { device: o.device }).unsqueeze(1);
  const cols = arange(0, m, 1, { device: o.device });
  return finish(rows.eq(cols).to(o.dtype), o.requiresGrad);
}

function draw(
  kind: 'uniform' | 'normal' | 'randint' | 'bernoulli',
  op: string,
  shape: number[],
  o: Resolved,
  a: number,
  b: number,
): Tensor {
  const s = checkShape(op, shape);
  const { seed, offset } = nextDraw(s.reduce((x, y) => x * y, 1));
  return finish(wrap(native.random(kind, s, o.dtype, o.device, seed, offset, a, b)), o.requiresGrad);
}

/** Uniform samples in [low, high) (default [0, 1)) from the global Philox generator (see fl.manualSeed). */
export function rand(shape: number[], options?: TensorOptions & { low?: number; high?: number }): Tensor {
  const o = opts('rand', options, 'f32', ['low', 'high']);
  return draw('uniform', 'rand', shape, o, options?.low ?? 0, options?.high ?? 1);
}

/** Normal samples, standard unless `mean` and `std` say. */
export function randn(shape: number[], options?: TensorOptions & { mean?: number; std?: number }): Tensor {
  const o = opts('randn', options, 'f32', ['mean', 'std']);
  return draw('normal', 'randn', shape, o, options?.mean ?? 0, options?.std ?? 1);
}

/** Integers uniformly in [low, high): i64 as in PyTorch, unless `dtype` says. */
export function randint(low: number, high: number, shape: number[], options?: TensorOptions): Tensor {
  const o = opts('randint', options, 'i64');
  if (!Number.isInteger(low) || !Number.isInteger(high))
    throw typeError('randint', `low and high must be integers, got ${describe(low)} and ${describe(high)}`);
  if (high <= low) throw rangeError('randint', `need low < high, got ${low} and ${high}`, 'ERR_RANGE');
  checkValueFits('randint', low, o.dtype);
  checkValueFits('randint', high - 1, o.dtype);
  return draw('randint', 'randint', shape, o, low, high);
}

/** 1 with probability p, else 0 (f32 unless `dtype` says). */
export function bernoulli(shape: number[], p: number, options?: TensorOptions): Tensor {
  const o = opts('bernoulli', options, 'f32');
  return draw('bernoulli', 'bernoulli', shape, o, p, 0);
}

function randomLike(op: string, t: Tensor, options: TensorOptions | undefined): TensorOptions {
  const o = likeOptions(op, t, options);
  const dtype = toDType(op, o.dtype!);
  if (!isFloating(dtype))
    throw typeError(op, `random samples need a floating dtype (f32, f64, bf16, f16), got ${dtype}; pass { dtype }`, 'ERR_DTYPE');
  return o;
}

/** Uniform samples in [0, 1) with the shape of `t`, and its dtype and device unless `options` say. */
export function randLike(t: Tensor, options?: TensorOptions): Tensor {
  const o = randomLike('randLike', t, options);
  return rand([...t.shape], o);
}

/** Standard normal samples with the shape of `t`, and its dtype and device unless `options` say. */
export function randnLike(t: Tensor, options?: TensorOptions): Tensor {
  const o = randomLike('randnLike', t, options);
  return randn([...t.shape], o);
}
