/** Helpers shared by the op modules: wrapping handles, scalars, gradient reduction, errors. */
import { native, type NativeTensor, type NewTensor } from '../native';
import { describe, flockError, type ErrorCode } from '../errors';
import { Tensor, type TensorLike } from '../tensor';
import { checkTensorArg } from '../validate';
import { type CanonicalDType, checkValueFits, promoteTypes, promoteWithScalar } from '../dtype';

export function wrap(h: NewTensor): Tensor {
  return new Tensor(h);
}

/**
 * A fresh handle made a Tensor's, to pass straight on to another native call in the same
 * statement: the Tensor (its tidy scope, or the garbage collector) frees it.
 */
export function held(h: NewTensor): NativeTensor {
  return new Tensor(h).handle;
}

export function shapeStr(s: readonly number[]): string {
  return `[${s.join(',')}]`;
}

/** `op: message` with `code` (ERR_SHAPE by default); its class follows the code (lib/errors.ts). */
export function rangeError(op: string, message: string, code: ErrorCode = 'ERR_SHAPE'): Error {
  return flockError(code, op, message);
}

/** `op: message` with `code` (ERR_ARG by default); its class follows the code (lib/errors.ts). */
export function typeError(op: string, message: string, code: ErrorCode = 'ERR_ARG'): Error {
  return flockError(code, op, message);
}

/** A live tensor argument of `op` (ERR_ARG / ERR_DISPOSED): the shared check, lib/validate.ts's. */
export const checkTensor: (op: string, name: string, v: unknown) => Tensor = checkTensorArg;

/** A 0-d tensor holding `value` (already known to fit `dtype`) on `device`. */
export function scalar(value: number, dtype: CanonicalDType, device: string): Tensor {
  return wrap(native.full([], dtype, device, value));
}

/** Converts the dtype of `t` when needed (recorded for autograd). */
export function castTo(t: Tensor, dtype: CanonicalDType): Tensor {
  return t.dtype === dtype ? t : t.to(dtype);
}

/** Both operands of a binary op as tensors of one promoted dtype. */
export function operands(op: string, a: Tensor, b: TensorLike): [Tensor, Tensor] {
  checkTensor(op, 'input', a);
  if (typeof b === 'number') {
    const dt = promoteWithScalar(a.dtype, b);
    checkValueFits(op, b, dt);
    return [castTo(a, dt), scalar(b, dt, a.device)];
  }
  if (typeof b === 'boolean') return [a, scalar(b ? 1 : 0, a.dtype, a.device)];
  checkTensor(op, 'other', b);
  const dt = promoteTypes(a.dtype, b.dtype);
  return [castTo(a, dt), castTo(b, dt)];
}

/** Sums a broadcast gradient back down to `shape`. */
export function sumTo(g: Tensor, shape: readonly number[]): Tensor {
  if (g.shape.length === shape.length && g.shape.every((s, i) => s === shape[i])) return g;
  const lead = g.shape.length - shape.length;
  const dims: number[] = [];
  for (let i = 0; i < g.shape.length; i++) {
    if (i < lead || (shape[i - lead] === 1 && g.shape[i] !== 1)) dims.push(i);
  }
  let r = dims.length ? wrap(native.reduce('sum', g.handle, dims, true)) : g;
  if (lead > 0 || r.shape.length !== shape.length) r = wrap(native.reshape(r.handle, [...shape]));
  return r;
}

export function normDim(op: string, dim: number, ndim: number): number {
  const n = Math.max(ndim, 1);
  if (typeof dim !== 'number' || !Number.isInteger(dim)) throw typeError(op, `dim must be an integer, got ${describe(dim)}`);
  if (dim < -n || dim >= n) throw rangeError(op, `dim ${dim} is out of range for a tensor of ${ndim} dimensions`, 'ERR_INDEX');
  return dim < 0 ? dim + n : dim;
}

/** Per ndim, every dim in order: one frozen array each, since a full reduction is the common call. */
const ALL_DIMS: number[][] = [];

/** The dims `dim` names, normalised (every dim when undefined); callers only read the result. */
export function dimList(op: string, dim: number | number[] | undefined, ndim: number): number[] {
  if (dim === undefined) {
    let all = ALL_DIMS[ndim];
    if (!all) {
      all = Object.freeze(Array.from({ length: ndim }, (_, i) => i)) as number[];
      ALL_DIMS[ndim] = all;
    }
    return all;
  }
  const list = Array.isArray(dim) ? dim : [dim];
  return list.map((d) => normDim(op, d, ndim));
}
