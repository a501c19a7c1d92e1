/** Element types and the promotion rules binary ops follow (as PyTorch's). */
import type { NativeDType } from '../types/native';

export type DType = NativeDType;

export const DTYPES: readonly DType[] = ['f32', 'f64', 'i32', 'i64', 'u8', 'bool', 'bf16', 'f16'];

export function isDType(v: unknown): v is DType {
  return typeof v === 'string' && (DTYPES as readonly string[]).includes(v);
}

export function isFloating(d: DType): boolean {
  return d === 'f32' || d === 'f64' || d === 'bf16' || d === 'f16';
}

export function itemSize(d: DType): number {
  return d === 'f64' || d === 'i64' ? 8 : d === 'f32' || d === 'i32' ? 4 : d === 'bf16' || d === 'f16' ? 2 : 1;
}

const RANK: Record<DType, number> = { bool: 0, u8: 1, i32: 2, i64: 3, f16: 4, bf16: 4, f32: 5, f64: 6 };

/** The dtype of a binary op's result on tensors of dtypes `a` and `b`. */
export function promoteTypes(a: DType, b: DType): DType {
  if (a === b) return a;
  if ((a === 'bf16' && b === 'f16') || (a === 'f16' && b === 'bf16')) return 'f32';
  return RANK[a] >= RANK[b] ? a : b;
}

/** The dtype of `tensor op number`: a JS number does not widen a tensor's float type. */
export function promoteWithScalar(t: DType, value: number): DType {
  if (isFloating(t)) return t;
  if (Number.isInteger(value)) return t === 'bool' ? 'i64' : t;
  return 'f32';
}

export type TypedArrayFor<D extends DType> = D extends 'f64'
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
export function viewBytes(buf: ArrayBuffer, dtype: DType): Float32Array | Float64Array | Int32Array | BigInt64Array | Uint8Array | Uint16Array {
  switch (dtype) {
    case 'f32': return new Float32Array(buf);
    case 'f64': return new Float64Array(buf);
    case 'i32': return new Int32Array(buf);
    case 'i64': return new BigInt64Array(buf);
    case 'u8': case 'bool': return new Uint8Array(buf);
    case 'bf16': case 'f16': return new Uint16Array(buf);
  }
}
