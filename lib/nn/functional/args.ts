/** Argument helpers shared by the functional ops: [h, w] pairs and checks with error codes. */
import type { Tensor } from '../../tensor';
import { rangeError, shapeStr, typeError } from '../../ops/util';

export type Pair = number | [number, number];

export function pair(op: string, name: string, v: Pair, min: number): [number, number] {
  const p: [number, number] = typeof v === 'number' ? [v, v] : v;
  if (!Array.isArray(p) || p.length !== 2 || !p.every((x) => Number.isInteger(x)))
    throw typeError(op, `${name} must be an integer or a pair of integers, got ${JSON.stringify(v)}`);
  if (p.some((x) => x < min)) throw rangeError(op, `${name} must be ≥ ${min}, got ${JSON.stringify(v)}`, 'ERR_RANGE');
  return [p[0], p[1]];
}

export function check4d(op: string, x: Tensor): void {
  if (x.ndim !== 4) throw rangeError(op, `expected a 4-D input [N, C, H, W], got ${shapeStr(x.shape)}`);
}

export function checkFloat(op: string, x: Tensor): void {
  if (x.dtype !== 'f32' && x.dtype !== 'f64') throw typeError(op, `expected an f32 or f64 input, got ${x.dtype}`, 'ERR_DTYPE');
}
