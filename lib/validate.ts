/**
 * Checks for the values inside options objects and constructor arguments, shared by nn, optim
 * and the parallel wrappers. A value of the wrong kind (a string where a number belongs, an
 * unknown choice) is ERR_ARG; a number outside its range is ERR_RANGE. Every message names the
 * user's op and the option: `SGD: lr must be a number ≥ 0, got the string "fast"`.
 */
import { Tensor } from './tensor';
import { argError, describe, flockError, outOfRange } from './errors';
import { type DType, isDType, isFloating } from './dtype';
import { normalizeDevice } from './device';

export interface NumberRange {
  /** Inclusive bounds. */
  min?: number;
  max?: number;
  /** Exclusive bounds. */
  above?: number;
  below?: number;
  integer?: boolean;
  /** Allow ±Infinity (default: finite only unless a bound says otherwise). */
  infinite?: boolean;
}

function rangeText(r: NumberRange): string {
  const parts: string[] = [];
  if (r.min !== undefined) parts.push(`≥ ${r.min}`);
  if (r.above !== undefined) parts.push(`> ${r.above}`);
  if (r.max !== undefined) parts.push(`≤ ${r.max}`);
  if (r.below !== undefined) parts.push(`< ${r.below}`);
  return `${r.integer ? 'an integer' : 'a number'}${parts.length ? ` ${parts.join(' and ')}` : ''}`;
}

/** `v` as a number in the range; ERR_ARG when it is not a number at all, ERR_RANGE when outside. */
export function checkNumber(op: string, name: string, v: unknown, r: NumberRange = {}): number {
  if (typeof v !== 'number') throw argError(op, `${name} must be ${rangeText(r)}, got ${describe(v)}`);
  const bad =
    Number.isNaN(v) ||
    (!r.infinite && !Number.isFinite(v)) ||
    (r.integer && Number.isFinite(v) && !Number.isInteger(v)) ||
    (r.min !== undefined && v < r.min) ||
    (r.max !== undefined && v > r.max) ||
    (r.above !== undefined && !(v > r.above)) ||
    (r.below !== undefined && !(v < r.below));
  if (bad) throw outOfRange(op, `${name} must be ${rangeText(r)}, got ${v}`);
  return v;
}

/** Any integer (a diagonal, an offset, a dim before normalization); ERR_ARG for anything else. */
export function checkInteger(op: string, name: string, v: unknown): number {
  if (typeof v !== 'number' || !Number.isInteger(v)) throw argError(op, `${name} must be an integer, got ${describe(v)}`);
  return v;
}

/** A non-negative (or ≥ min) integer count or size. */
export function checkInt(op: string, name: string, v: unknown, min = 0): number {
  return checkNumber(op, name, v, { integer: true, min });
}

export function checkBool(op: string, name: string, v: unknown): boolean {
  if (typeof v !== 'boolean') throw argError(op, `${name} must be a boolean, got ${describe(v)}`);
  return v;
}

/** One of `choices`; anything else is ERR_ARG listing them. */
export function checkChoice<T extends string>(op: string, name: string, v: unknown, choices: readonly T[]): T {
  if (typeof v !== 'string' || !(choices as readonly string[]).includes(v))
    throw argError(op, `${name} must be one of ${choices.map((c) => `'${c}'`).join(', ')}, got ${describe(v)}`);
  return v as T;
}

/**
 * `v` for a message, never throwing: an array of up to 16 numbers as written (`[2,-1]`), any other
 * array by its length and first element that is not a number, anything else as `describe` puts it.
 * (JSON.stringify cannot print a tensor made inside a tidy scope: it refers to its scope.)
 */
export function valueText(v: unknown): string {
  if (!Array.isArray(v)) return describe(v);
  const odd = v.findIndex((x) => typeof x !== 'number');
  if (odd >= 0) return `an array whose element ${odd} is ${describe(v[odd])}`;
  return v.length <= 16 ? `[${v.join(',')}]` : `an array of ${v.length} numbers`;
}

/**
 * A live tensor (ERR_ARG when not a tensor, ERR_DISPOSED when disposed): the one check of a tensor
 * argument, shared by the ops (lib/ops/util.ts), the functional API and the layers.
 */
export function checkTensorArg(op: string, name: string, v: unknown): Tensor {
  if (!(v instanceof Tensor)) throw argError(op, `${name} must be a Tensor, got ${describe(v)}`);
  if (v.isDisposed) throw flockError('ERR_DISPOSED', op, `${name} has been disposed`);
  return v;
}

/**
 * The constructor check of a class built by an async `create`: `create` passes `expected`, a
 * symbol private to the class's file, so a user's `new` (as PyTorch code writes it) is refused
 * with ERR_ARG naming the call to make instead (`usage`), rather than failing half-built.
 */
export function checkCreateKey(op: string, key: unknown, expected: symbol, usage: string): void {
  if (key !== expected) throw argError(op, `use ${usage}; the constructor is not public (setting up ${op} is asynchronous)`);
}

/** A file or directory path: a non-empty string (ERR_ARG otherwise). */
export function checkPath(op: string, name: string, v: unknown): string {
  if (typeof v !== 'string' || v.length === 0) throw argError(op, `${name} must be a non-empty string, got ${describe(v)}`);
  return v;
}

/** A tensor, or null/undefined for "none". */
export function checkOptionalTensor(op: string, name: string, v: unknown): Tensor | null {
  return v === undefined || v === null ? null : checkTensorArg(op, name, v);
}

/** The dtype of a layer's parameters: a floating dtype (default f32). */
export function checkFloatDType(op: string, v: unknown): DType {
  if (v === undefined) return 'f32';
  if (!isDType(v)) throw argError(op, `dtype must be a dtype name such as 'f32', got ${describe(v)}`);
  if (!isFloating(v)) throw flockError('ERR_DTYPE', op, `dtype must be a floating dtype (f32, f64, bf16, f16) for parameters, got ${v}`);
  return v;
}

/** A device name, normalised; undefined stays undefined (the default device). */
export function checkDevice(op: string, v: unknown): string | undefined {
  return v === undefined ? undefined : normalizeDevice(v, op);
}

/** A positive-integer size or list of sizes, as layer shapes take them. */
export function checkSizes(op: string, name: string, v: unknown, min = 1): number[] {
  const list = typeof v === 'number' ? [v] : v;
  if (!Array.isArray(list) || list.length === 0 || !list.every((x) => typeof x === 'number'))
    throw argError(op, `${name} must be an integer or a non-empty array of integers, got ${describe(v)}`);
  for (const x of list) checkNumber(op, name, x, { integer: true, min });
  return [...list];
}
