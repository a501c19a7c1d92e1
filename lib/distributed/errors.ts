/** Errors of the distributed layer: a message a user can act on plus a stable `code`. */
import { describe, errorOf, type AnyFlockError } from '../errors';

export type DistErrorCode =
  | 'ERR_TIMEOUT'
  | 'ERR_PEER_LOST'
  | 'ERR_AUTH'
  | 'ERR_ARG'
  | 'ERR_STORE'
  | 'ERR_NCCL'
  | 'ERR_COLLECTIVE_MISMATCH'
  | 'ERR_DEVICE'
  | 'ERR_DTYPE'
  | 'ERR_DISPOSED';

export function distError(code: DistErrorCode, message: string): AnyFlockError {
  return errorOf(code, message);
}

/** `value` when it is an integer in [min, max] (or undefined with a fallback); ERR_ARG naming `op` and `name` otherwise. */
export function intOption(op: string, name: string, value: unknown, min: number, max = Number.MAX_SAFE_INTEGER): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max)
    throw distError(
      'ERR_ARG',
      `${op}: ${name} must be an integer in [${min}, ${max === Number.MAX_SAFE_INTEGER ? '∞' : max}], got ${describe(value)}`,
    );
  return value;
}

/** `value` when it is a string (or undefined); ERR_ARG otherwise. */
export function stringOption(op: string, name: string, value: unknown): string {
  if (typeof value !== 'string') throw distError('ERR_ARG', `${op}: ${name} must be a string, got ${describe(value)}`);
  return value;
}
