/** Element types, PyTorch's names for them, and the promotion rules binary ops follow (as PyTorch's). */
import type { NativeDType } from '../types/native';
import { dtypeError, outOfRange } from './errors';

/** The short name a tensor reports as its `dtype`. */
export type CanonicalDType = NativeDType;

/** PyTorch's names, accepted wherever a dtype is taken. */
export type DTypeAlias =
  | 'float32'
  | 'float'
  | 'float64'
  | 'double'
  | 'bfloat16'
  | 'float16'
  | 'half'
  | 'int32'
  | 'int'
  | 'int64'
  | 'long'
  | 'uint8';

/** A dtype as an argument: a short name ('f32', 'i64', ...) or one of PyTorch's names ('float32', 'long', ...). */
export type DType = CanonicalDType | DTypeAlias;

export const DTYPES: readonly CanonicalDType[] = ['f32', 'f64', 'i32', 'i64', 'u8', 'bool', 'bf16', 'f16'];

const ALIASES: Readonly<Record<DTypeAlias, CanonicalDType>> = {
  float32: 'f32',
  float: 'f32',
  float64: 'f64',
  double: 'f64',
  bfloat16: 'bf16',
  float16: 'f16',
  half: 'f16',
  int32: 'i32',
  int: 'i32',
  int64: 'i64',
  long: 'i64',
  uint8: 'u8',
};

/** PyTorch's names for the dtypes, in the order messages list them. */
export const DTYPE_ALIASES: readonly DTypeAlias[] = Object.keys(ALIASES) as DTypeAlias[];

/** The short name of a dtype name or alias, or undefined when `v` names no dtype. */
export function canonicalDType(v: unknown): CanonicalDType | undefined {
  if (typeof v !== 'string') return undefined;
  if ((DTYPES as readonly string[]).includes(v)) return v as CanonicalDType;
  return Object.hasOwn(ALIASES, v) ? ALIASES[v as DTypeAlias] : undefined;
}

/** Whether `v` is a dtype's short name or one of PyTorch's names for it. */
export function isDType(v: unknown): v is DType {
  return canonicalDType(v) !== undefined;
}

/** The short name of the dtype `v` names; throws ERR_DTYPE naming `op` and the accepted names. */
export function toDType(op: string, v: unknown): CanonicalDType {
  const d = canonicalDType(v);
  if (d === undefined)
    throw dtypeError(
      op,
      `unknown dtype ${typeof v === 'string' ? `'${v}'` : String(v)} (expected ${DTYPES.join(', ')} or ${DTYPE_ALIASES.join(', ')})`,
    );
  return d;
}

export function isFloating(dtype: DType): boolean {
  const d = canonicalDType(dtype);
  return d === 'f32' || d === 'f64' || d === 'bf16' || d === 'f16';
}

export function itemSize(d: CanonicalDType): number {
  return d === 'f64' || d === 'i64' ? 8 : d === 'f32' || d === 'i32' ? 4 : d === 'bf16' || d === 'f16' ? 2 : 1;
}

const RANK: Record<CanonicalDType, number> = { bool: 0, u8: 1, i32: 2, i64: 3, f16: 4, bf16: 4, f32: 5, f64: 6 };

/** The dtype of a binary op's result on tensors of dtypes `a` and `b`. */
export function promoteTypes(a: CanonicalDType, b: CanonicalDType): CanonicalDType {
  if (a === b) return a;
  if ((a === 'bf16' && b === 'f16') || (a === 'f16' && b === 'bf16')) return 'f32';
  return RANK[a] >= RANK[b] ? a : b;
}

/** The dtype of `tensor op number`: a JS number does not widen a tensor's float type. */
export function promoteWithScalar(t: CanonicalDType, value: number): CanonicalDType {
  if (isFloating(t)) return t;
  if (Number.isInteger(value)) return t === 'bool' ? 'i64' : t;
  return 'f32';
}

export type TypedArrayFor<D extends CanonicalDType> = D extends 'f64'
  ? Float64Array
  : D extends 'i32'
    ? Int32Array
    : D extends 'i64'
      ? BigInt64Array
      : D extends 'u8' | 'bool'
        ? Uint8Array
        : D extends 'bf16' | 'f16'
          ? Uint16Array
          : Float32Array;

/** A view of raw bytes as the natural typed array of `dtype`. */
export function viewBytes(
  buf: ArrayBuffer,
  dtype: CanonicalDType,
): Float32Array | Float64Array | Int32Array | BigInt64Array | Uint8Array | Uint16Array {
  switch (dtype) {
    case 'f32':
      return new Float32Array(buf);
    case 'f64':
      return new Float64Array(buf);
    case 'i32':
      return new Int32Array(buf);
    case 'i64':
      return new BigInt64Array(buf);
    case 'u8':
    case 'bool':
      return new Uint8Array(buf);
    case 'bf16':
    case 'f16':
      return new Uint16Array(buf);
  }
}

/** The integer dtypes' ranges as doubles, and as they are written in messages. */
const INT_RANGE: Partial<Record<CanonicalDType, { lo: number; hi: number; text: string }>> = {
  i32: { lo: -(2 ** 31), hi: 2 ** 31 - 1, text: '[-2147483648, 2147483647]' },
  // 2^63 is the first double above the i64 range; every double below it fits.
  i64: { lo: -(2 ** 63), hi: 2 ** 63 - 1024, text: '[-2^63, 2^63-1]' },
  u8: { lo: 0, hi: 255, text: '[0, 255]' },
};

/**
 * Throws ERR_RANGE when the JS number `value` has no place in the integer dtype `dtype` (NaN, an
 * infinity, or outside its range) instead of letting the conversion wrap; fractions truncate
 * toward zero as in PyTorch. Every number fits a floating or bool dtype.
 */
export function checkValueFits(op: string, value: number, dtype: CanonicalDType): void {
  const range = INT_RANGE[dtype];
  if (range === undefined) return;
  const t = Math.trunc(value);
  if (!(t >= range.lo && t <= range.hi)) throw outOfRange(op, `value ${value} is out of range for ${dtype} ${range.text}`);
}
