/** Element-wise ops with NumPy broadcasting; their gradients are in lib/ops/grads/elementwise.ts. */
import { native } from '../native';
import type { Tensor, TensorLike } from '../tensor';
import { record } from '../dispatch/record';
import { noGrad } from '../dispatch/grad_mode';
import {
  type CanonicalDType,
  type DType,
  DTYPES,
  DTYPE_ALIASES,
  canonicalDType,
  checkValueFits,
  isFloating,
  promoteTypes,
  toDType,
} from '../dtype';
import { checkOptions, describe, didYouMean } from '../errors';
import { bumpVersions, checkInPlace } from '../dispatch/version';
import { normalizeDevice } from '../device';
import { castTo, checkTensor, operands, scalar, typeError, wrap } from './util';
import { autocastArgs } from '../dispatch/autocast';
import { checkNumber } from '../validate';
import { type BinaryGrad, binaryKernel, recordBinary, unaryGrad, unaryOp } from './call_shapes';
import { abs, eq, lt } from './generated/elementwise';
import { gradOf } from './grads/table';

// The ops of a uniform call shape are generated from the manifest (lib/ops/generated/).
export * from './generated/elementwise';

// The binary ops' formulas as recordBinary takes them, made once (it passes the operands), so an op
// that is not recorded allocates nothing for its gradient.
const two = (grads: (Tensor | null)[]): [Tensor | null, Tensor | null] => [grads[0], grads[1]];
const addGrad: BinaryGrad = (g, input, other, out) => two(gradOf('add').grad(g, { input, other, out }));
const subGrad: BinaryGrad = (g, input, other, out) => two(gradOf('sub').grad(g, { input, other, out }));
const mulGrad: BinaryGrad = (g, input, other, out) => two(gradOf('mul').grad(g, { input, other, out }));
const divGrad: BinaryGrad = (g, input, other, out) => two(gradOf('div').grad(g, { input, other, out }));
const powGrad: BinaryGrad = (g, input, other, out) => two(gradOf('pow').grad(g, { input, other, out }));
const maximumGrad: BinaryGrad = (g, input, other, out) => two(gradOf('maximum').grad(g, { input, other, out }));
const minimumGrad: BinaryGrad = (g, input, other, out) => two(gradOf('minimum').grad(g, { input, other, out }));

export function add(x: Tensor, other: TensorLike, alpha = 1): Tensor {
  const [a, b0] = operands('add', x, other);
  checkNumber('add', 'alpha', alpha, { infinite: true });
  const b = alpha === 1 ? b0 : mul(b0, alpha);
  return recordBinary(binaryKernel('add', a, b), 'add', a, b, addGrad);
}

export function sub(x: Tensor, other: TensorLike, alpha = 1): Tensor {
  const [a, b0] = operands('sub', x, other);
  checkNumber('sub', 'alpha', alpha, { infinite: true });
  const b = alpha === 1 ? b0 : mul(b0, alpha);
  return recordBinary(binaryKernel('sub', a, b), 'sub', a, b, subGrad);
}

export function mul(x: Tensor, other: TensorLike): Tensor {
  const [a, b] = operands('mul', x, other);
  return recordBinary(binaryKernel('mul', a, b), 'mul', a, b, mulGrad);
}

export function div(x: Tensor, other: TensorLike): Tensor {
  let [a, b] = operands('div', x, other);
  if (!isFloating(a.dtype)) [a, b] = [castTo(a, 'f32'), castTo(b, 'f32')];
  return recordBinary(binaryKernel('div', a, b), 'div', a, b, divGrad);
}

export function pow(x: Tensor, exponent: TensorLike): Tensor {
  checkTensor('pow', 'input', x);
  [x, exponent] = autocastArgs('pow', x, exponent);
  if (typeof exponent === 'number') {
    const a = isFloating(x.dtype) ? x : castTo(x, 'f32');
    const out = wrap(native.unary('pow_scalar', a.handle, exponent));
    return record(out, 'pow', [a], (g) => [unaryGrad('pow_scalar', a, g, exponent)], { savesOutput: false });
  }
  let [a, b] = operands('pow', x, exponent);
  if (!isFloating(a.dtype)) [a, b] = [castTo(a, 'f32'), castTo(b, 'f32')];
  return recordBinary(binaryKernel('pow', a, b), 'pow', a, b, powGrad, true);
}

function minmax(op: 'maximum' | 'minimum', x: Tensor, other: TensorLike): Tensor {
  const [a, b] = operands(op, x, other);
  return recordBinary(binaryKernel(op, a, b), op, a, b, op === 'maximum' ? maximumGrad : minimumGrad);
}
export const maximum = (a: Tensor, b: TensorLike): Tensor => minmax('maximum', a, b);
export const minimum = (a: Tensor, b: TensorLike): Tensor => minmax('minimum', a, b);

export function logicalAnd(a: Tensor, b: Tensor): Tensor {
  return binaryKernel('logical_and', castTo(checkTensor('logicalAnd', 'a', a), 'bool'), castTo(checkTensor('logicalAnd', 'b', b), 'bool'));
}
export function logicalOr(a: Tensor, b: Tensor): Tensor {
  return binaryKernel('logical_or', castTo(checkTensor('logicalOr', 'a', a), 'bool'), castTo(checkTensor('logicalOr', 'b', b), 'bool'));
}
export function logicalNot(a: Tensor): Tensor {
  return eq(castTo(checkTensor('logicalNot', 'a', a), 'bool'), false as unknown as number);
}

/** GELU, exact (erf) or with the tanh approximation. */
export function gelu(x: Tensor, approximate: 'none' | 'tanh' = 'none'): Tensor {
  if (approximate !== 'none' && approximate !== 'tanh')
    throw typeError('gelu', `approximate must be 'none' or 'tanh', got ${String(approximate)}`);
  return unaryOp('gelu', approximate === 'tanh' ? 'gelu_tanh' : 'gelu', x);
}

/**
 * Limits values to [min, max] (either bound may be left out). Number bounds run one kernel; tensor
 * bounds broadcast with the input, and as in PyTorch the gradient reaches the input where it lies
 * within its bounds and each bound where it binds (max wins where min > max).
 */
export function clamp(x: Tensor, min?: TensorLike | null, max?: TensorLike | null): Tensor {
  checkTensor('clamp', 'input', x);
  if ((min !== null && typeof min === 'object') || (max !== null && typeof max === 'object')) return clampTensor(x, min, max);
  const lo = min ?? -Infinity,
    hi = max ?? Infinity;
  if (typeof lo !== 'number' || typeof hi !== 'number' || Number.isNaN(lo) || Number.isNaN(hi))
    throw typeError('clamp', `min and max must be numbers or tensors, got ${describe(min)} and ${describe(max)}`);
  // As PyTorch's type promotion: a fractional bound makes an integer input floating.
  const fractional = (v: number) => Number.isFinite(v) && !Number.isInteger(v);
  const input = !isFloating(x.dtype) && (fractional(lo) || fractional(hi)) ? castTo(x, 'f32') : x;
  return unaryOp('clamp', 'clamp', input, lo, hi, true);
}

function clampTensor(x: Tensor, min: TensorLike | null | undefined, max: TensorLike | null | undefined): Tensor {
  const bound = (v: TensorLike | null | undefined, name: string): Tensor | null => {
    if (v === null || v === undefined) return null;
    if (typeof v === 'number') return scalar(v, x.dtype, x.device);
    return checkTensor('clamp', name, v);
  };
  let lo = bound(min, 'min'),
    hi = bound(max, 'max');
  let dt = x.dtype;
  for (const b of [lo, hi]) if (b) dt = promoteTypes(dt, b.dtype);
  const a = castTo(x, dt);
  lo = lo && castTo(lo, dt);
  hi = hi && castTo(hi, dt);
  const out = noGrad(() => {
    let r = a;
    if (lo) r = maximum(r, lo);
    if (hi) r = minimum(r, hi);
    return r === a ? clone(a) : r;
  });
  const inputs = [a, lo, hi].filter((t): t is Tensor => t !== null);
  return record(out, 'clamp', inputs, (g) => gradOf('clamp').grad(g, { input: a, min: lo, max: hi }), { savesOutput: false });
}

/**
 * `start + weight * (end - start)` with broadcasting (weight a number or a tensor), computed as
 * PyTorch does for accuracy near weight = 1. Floating tensors of one dtype.
 */
export function lerp(start: Tensor, end: Tensor, weight: TensorLike): Tensor {
  checkTensor('lerp', 'start', start);
  checkTensor('lerp', 'end', end);
  if (!isFloating(start.dtype) || start.dtype !== end.dtype)
    throw typeError('lerp', `start and end must be floating tensors of one dtype, got ${start.dtype} and ${end.dtype}`, 'ERR_DTYPE');
  let w: Tensor;
  if (typeof weight === 'number') w = scalar(weight, start.dtype, start.device);
  else {
    w = checkTensor('lerp', 'weight', weight);
    if (w.dtype !== start.dtype) throw typeError('lerp', `weight must be ${start.dtype} like start, got ${w.dtype}`, 'ERR_DTYPE');
  }
  const oneMinus = (t: Tensor) => sub(scalar(1, t.dtype, t.device), t);
  const out = noGrad(() => {
    const diff = sub(end, start);
    const small = lt(abs(w), 0.5);
    return where(small, add(start, mul(w, diff)), sub(end, mul(diff, oneMinus(w))));
  });
  return record(out, 'lerp', [start, end, w], (g) => gradOf('lerp').grad(g, { start, end, weight: w }), { savesOutput: false });
}

export function where(cond: Tensor, a: TensorLike, b: TensorLike): Tensor {
  checkTensor('where', 'condition', cond);
  let ta: Tensor, tb: Tensor;
  if (typeof a === 'number' && typeof b === 'number') {
    ta = scalar(a, 'f32', cond.device);
    tb = scalar(b, 'f32', cond.device);
  } else if (typeof a === 'number') {
    [tb, ta] = operands('where', b as Tensor, a);
  } else {
    [ta, tb] = operands('where', a, b);
  }
  const c = castTo(cond, 'bool');
  const out = wrap(native.where(c.handle, ta.handle, tb.handle));
  return record(out, 'where', [ta, tb], (g) => gradOf('where').grad(g, { condition: c, input: ta, other: tb }), { savesOutput: false });
}

/** `x` with `value` wherever `mask` is true (mask broadcasts). */
export function maskedFill(x: Tensor, mask: Tensor, value: number): Tensor {
  checkTensor('maskedFill', 'input', x);
  checkTensor('maskedFill', 'mask', mask);
  if (mask.dtype !== 'bool') throw typeError('maskedFill', `mask must be a bool tensor, got ${mask.dtype}`, 'ERR_DTYPE');
  checkValueFits('maskedFill', value, x.dtype);
  return where(mask, scalar(value, x.dtype, x.device), x);
}

/** What `t.to()` takes: a dtype (short or PyTorch name), a device, or both. */
export type ToTarget = DType | (string & {}) | { dtype?: DType; device?: string };

/** The dtype half of {@link to}: recorded (as 'cast') between floating dtypes. */
export function cast(x: Tensor, dtype: CanonicalDType): Tensor {
  if (dtype === x.dtype) return x;
  const out = wrap(native.cast(x.handle, dtype));
  if (!isFloating(dtype) || !isFloating(x.dtype)) return out;
  return record(out, 'cast', [x], (g) => gradOf('to').grad(g, { input: x, changed: 'dtype' }), { savesOutput: false });
}

/** The device half of {@link to}. */
export function move(x: Tensor, device: string): Tensor {
  if (device === x.device) return x;
  const out = wrap(native.to(x.handle, device));
  return record(out, 'to', [x], (g) => gradOf('to').grad(g, { input: x, changed: 'device' }), { savesOutput: false });
}

function isDevice(s: string): boolean {
  try {
    normalizeDevice(s);
    return true;
  } catch {
    return false;
  }
}

/**
 * Casts to a dtype, moves to a device, or both (`{ dtype, device }`); recorded for autograd between
 * floating dtypes. A string is read as a dtype name first ('f32', 'float32', 'long', ...), then as a
 * device ('cpu', 'cuda:N').
 */
export function to(x: Tensor, target: ToTarget): Tensor {
  checkTensor('to', 'input', x);
  if (target !== null && typeof target === 'object') {
    const o = checkOptions('to', target, ['dtype', 'device']);
    const moved = o.device === undefined ? x : move(x, normalizeDevice(o.device, 'to'));
    return o.dtype === undefined ? moved : cast(moved, toDType('to', o.dtype));
  }
  const dtype = canonicalDType(target);
  if (dtype !== undefined) return cast(x, dtype);
  if (typeof target === 'string' && isDevice(target)) return move(x, normalizeDevice(target, 'to'));
  const guess = typeof target === 'string' ? didYouMean(target, [...DTYPES, ...DTYPE_ALIASES, 'cpu', 'cuda']) : undefined;
  throw typeError(
    'to',
    `${describe(target)} is neither a dtype (${DTYPES.join(', ')}, or PyTorch's names such as float32, long) ` +
      `nor a device ('cpu', 'cuda', 'cuda:N')${guess ? ` (did you mean '${guess}'?)` : ''}; ` +
      'pass { dtype, device } for both',
  );
}

export function clone(x: Tensor): Tensor {
  checkTensor('clone', 'input', x);
  return record(wrap(native.clone(x.handle)), 'clone', [x], (g) => gradOf('clone').grad(g, {}), { savesOutput: false });
}

/**
 * In-place copy of `src` into `dst`, not recorded by autograd; used by optimizers and state
 * loading. Outside noGrad, `dst` must not require grad; the write bumps `dst`'s version counter.
 */
export function copy_(dst: Tensor, src: Tensor): Tensor {
  checkInPlace('copy_', dst);
  noGrad(() => native.copy_(dst.handle, src.handle));
  bumpVersions('copy_', [dst]);
  return dst;
}
