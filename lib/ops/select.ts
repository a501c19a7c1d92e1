/**
 * Selections whose size depends on values: maskedSelect and nonzero. Like torch on CUDA they count
 * the true elements first (a sync point: the count is read back), then fill the result.
 * maskedSelect's gradient is in lib/ops/grads/select.ts.
 */
import { native } from '../native';
import type { Tensor } from '../tensor';
import { record } from '../dispatch/record';
import { checkOptions, describe } from '../errors';
import { checkTensor, rangeError, typeError, held, wrap } from './util';
import { gradOf } from './grads/table';

function countTrue(mask: Tensor): number {
  if (mask.numel() === 0) return 0;
  const n = wrap(native.reduce('sum', held(native.cast(mask.handle, 'i64')), [], false));
  return Number(n.itemSync());
}

/** A bool mask of x's non-zero elements (NaN counts as non-zero). */
function truth(x: Tensor): Tensor {
  if (x.dtype === 'bool') return x;
  const zero = wrap(native.full([], x.dtype, x.device, 0));
  return wrap(native.binary('ne', x.handle, zero.handle));
}

/**
 * The elements of `x` where `mask` (a bool tensor, broadcast with x) is true, as a 1-D tensor in
 * row-major order (torch.masked_select).
 */
export function maskedSelect(x: Tensor, mask: Tensor): Tensor {
  checkTensor('maskedSelect', 'input', x);
  checkTensor('maskedSelect', 'mask', mask);
  if (mask.dtype !== 'bool') throw typeError('maskedSelect', `mask must be a bool tensor, got ${mask.dtype}`, 'ERR_DTYPE');
  const shape = broadcastShape(x.shape, mask.shape);
  const m = sameShape(mask.shape, shape) ? mask : wrap(native.expand(mask.handle, shape));
  const n = countTrue(m);
  const out = wrap(native.maskedSelect(x.handle, m.handle, n));
  return record(out, 'maskedSelect', [x], (g) => gradOf('maskedSelect').grad(g, { input: x, mask: m, count: n }), { savesOutput: false });
}

/**
 * The coordinates of x's non-zero elements: i64 [count, ndim] in row-major order
 * (torch.nonzero), or with `asTuple` one 1-D tensor per dim (torch.nonzero(as_tuple=True)).
 */
export function nonzero(x: Tensor, options?: { asTuple?: false }): Tensor;
export function nonzero(x: Tensor, options: { asTuple: true }): Tensor[];
export function nonzero(x: Tensor, options?: { asTuple?: boolean }): Tensor | Tensor[] {
  checkTensor('nonzero', 'input', x);
  checkOptions('nonzero', options, ['asTuple']);
  const asTuple = options?.asTuple ?? false;
  if (typeof asTuple !== 'boolean') throw typeError('nonzero', `asTuple must be a boolean, got ${describe(asTuple)}`);
  const m = truth(x);
  const out = wrap(native.nonzero(m.handle, countTrue(m)));
  if (!asTuple) return out;
  if (x.ndim === 0) return [wrap(native.full([out.shape[0]], 'i64', x.device, 0))]; // torch treats a 0-d input as 1-D
  const cols = Array.from({ length: x.ndim }, (_, d) => wrap(native.narrow(held(native.permute(out.handle, [1, 0])), 0, d, 1)));
  return cols.map((c) => wrap(native.reshape(c.handle, [out.shape[0]])));
}

function sameShape(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((s, i) => s === b[i]);
}

function broadcastShape(a: readonly number[], b: readonly number[]): number[] {
  const n = Math.max(a.length, b.length);
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const x = a[a.length - n + i] ?? 1,
      y = b[b.length - n + i] ?? 1;
    if (x !== y && x !== 1 && y !== 1)
      throw rangeError('maskedSelect', `shapes [${a.join(',')}] and [${b.join(',')}] cannot be broadcast together`);
    out.push(x === 1 ? y : x);
  }
  return out;
}
