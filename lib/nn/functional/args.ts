/** Argument helpers shared by the functional ops and layers: [h, w] pairs, input checks, layer tensor options. */
import type { Tensor } from '../../tensor';
import { type DType, isFloating } from '../../dtype';
import { argError, flockError } from '../../errors';
import { checkDevice, checkFloatDType, checkTensorArg, valueText } from '../../validate';
import { shapeStr } from '../../ops/util';

export type Pair = number | [number, number];

export function pair(op: string, name: string, v: Pair, min: number): [number, number] {
  const p = typeof v === 'number' ? [v, v] : v;
  if (!Array.isArray(p) || p.length !== 2 || !p.every((x) => Number.isInteger(x)))
    throw argError(op, `${name} must be an integer or a pair of integers, got ${valueText(v)}`);
  if (p.some((x) => x < min)) throw flockError('ERR_RANGE', op, `${name} must be ≥ ${min}, got ${Array.isArray(v) ? valueText(v) : v}`);
  return [p[0], p[1]];
}

/** A live tensor argument (ERR_ARG / ERR_DISPOSED naming `op`). */
export function tensorArg(op: string, name: string, v: unknown): Tensor {
  return checkTensorArg(op, name, v);
}

export function check4d(op: string, x: Tensor): void {
  if (x.ndim !== 4) throw flockError('ERR_SHAPE', op, `expected a 4-D input [N, C, H, W], got ${shapeStr(x.shape)}`);
}

export function checkFloat(op: string, x: Tensor, name = 'input'): void {
  if (!isFloating(x.dtype)) throw flockError('ERR_DTYPE', op, `expected a floating (f32, f64, bf16, f16) ${name}, got ${x.dtype}`);
}

/** The dtype and device options every layer with parameters takes, checked as `op`. */
export function tensorOptions(op: string, o: { dtype?: unknown; device?: unknown }): { dtype: DType; device: string | undefined } {
  return { dtype: checkFloatDType(op, o.dtype), device: checkDevice(op, o.device) };
}
