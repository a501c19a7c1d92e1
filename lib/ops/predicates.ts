/**
 * Tests of values: isclose and allclose (bool results, no gradient); isnan, isinf and isfinite are
 * generated from the manifest (lib/ops/generated/) and re-exported here.
 */
import type { Tensor } from '../tensor';
import { checkOptions, describe } from '../errors';
import { isFloating } from '../dtype';
import { castTo, checkTensor, rangeError, typeError } from './util';
import { isfinite, isnan } from './generated/elementwise';
import { abs, eq, le, logicalAnd, logicalNot, logicalOr, mul, add, sub } from './elementwise';
import { sum } from './reduce';

export { isnan } from './generated/elementwise';

/** Options of {@link isclose} and {@link allclose}, with PyTorch's defaults. */
export interface CloseOptions {
  /** Relative tolerance (default 1e-5). */
  rtol?: number;
  /** Absolute tolerance (default 1e-8). */
  atol?: number;
  /** Whether NaN equals NaN (default false). */
  equalNan?: boolean;
}

function closeArgs(op: string, a: Tensor, b: Tensor, options: CloseOptions | undefined): Required<CloseOptions> {
  checkTensor(op, 'input', a);
  checkTensor(op, 'other', b);
  const { rtol = 1e-5, atol = 1e-8, equalNan = false } = checkOptions<CloseOptions>(op, options, ['rtol', 'atol', 'equalNan']);
  for (const [name, v] of [
    ['rtol', rtol],
    ['atol', atol],
  ] as const) {
    if (typeof v !== 'number' || Number.isNaN(v)) throw typeError(op, `${name} must be a number, got ${describe(v)}`);
    if (v < 0) throw rangeError(op, `${name} must be non-negative, got ${v}`, 'ERR_RANGE');
  }
  if (typeof equalNan !== 'boolean') throw typeError(op, `equalNan must be a boolean, got ${describe(equalNan)}`);
  if (a.dtype !== b.dtype) throw typeError(op, `input and other must have the same dtype, got ${a.dtype} and ${b.dtype}`, 'ERR_DTYPE');
  return { rtol, atol, equalNan };
}

/**
 * Element-wise `|a - b| <= atol + rtol * |b|` (broadcasting), as torch.isclose: equal values
 * (infinities included) are close, NaNs only with `equalNan`. Integer tensors compare in f32.
 */
export function isclose(a: Tensor, b: Tensor, options?: CloseOptions): Tensor {
  const { rtol, atol, equalNan } = closeArgs('isclose', a, b, options);
  let close = eq(a, b);
  if (equalNan && isFloating(a.dtype)) close = logicalOr(close, logicalAnd(isnan(a), isnan(b)));
  if (a.dtype === 'bool' || (rtol === 0 && atol === 0)) return close;
  const x = isFloating(a.dtype) ? a : castTo(a, 'f32');
  const y = isFloating(b.dtype) ? b : castTo(b, 'f32');
  const err = abs(sub(x, y));
  const allowed = add(mul(abs(y), rtol), atol);
  return logicalOr(close, logicalAnd(isfinite(err), le(err, allowed)));
}

/** Whether every element is close ({@link isclose}); a sync point (reads the answer, blocking). */
export function allclose(a: Tensor, b: Tensor, options?: CloseOptions): boolean {
  closeArgs('allclose', a, b, options);
  const far = sum(logicalNot(isclose(a, b, options)));
  return Number(far.itemSync()) === 0;
}
